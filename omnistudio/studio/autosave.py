"""Autosave of the script being edited: at most a few seconds of typing are ever lost.

The app calls :meth:`Autosave.save` on every change; writes are throttled to one per
``interval`` seconds (the app's timer calls :meth:`flush` so the last edit lands too) and are
atomic, so a crash or kill mid-write leaves the previous copy intact.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from omnistudio.commit import atomic_write_bytes
from omnistudio.config import locations

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 2.0


class Autosave:
    """Throttled, atomic saving of one text to ``path`` (default: the user data folder)."""

    def __init__(self, path: Path | None = None, interval: float = DEFAULT_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path or locations().autosave_file
        self.interval = interval
        self._clock = clock
        self._pending: str | None = None
        self._saved: str | None = None
        self._last_write = -float("inf")

    def restore(self) -> str | None:
        """The autosaved script, or None when there is none (or it cannot be read)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("cannot restore autosave %s: %s", self.path, exc)
            return None
        self._saved = text
        return text

    def save(self, text: str) -> bool:
        """Note a change; write now if the last write is older than ``interval``. True if written."""
        self._pending = text
        if self._clock() - self._last_write >= self.interval:
            return self.flush()
        return False

    def flush(self) -> bool:
        """Write the pending text if it differs from what is on disk. True if written."""
        text, self._pending = self._pending, None
        if text is None or text == self._saved:
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path, lambda tmp: tmp.write_text(text, encoding="utf-8"), suffix=".script")
        self._saved = text
        self._last_write = self._clock()
        return True

    @property
    def dirty(self) -> bool:
        return self._pending is not None and self._pending != self._saved
