"""Which engine the MCP tools render through.

``omnistudio mcp`` (stdio, one agent): :class:`LocalBackend` loads the model on first use and
renders one take at a time. ``omnistudio serve``'s ``/mcp``: the server's backend
(:mod:`omnistudio.mcp.http`) hands out the server's shared link, under its admission limit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from omnistudio.engine.settings import EngineConfig

if TYPE_CHECKING:
    from omnistudio.take.link import EngineLink


class Backend(Protocol):
    """What the tools render through."""

    asr_model: Path | None  # the Whisper model of check_take and measured caption words (None: the default)

    def link(self, progress: Callable[[str], None] | None = None) -> EngineLink:
        """The EngineLink (loaded now if it is not yet); a UserError when there is none."""

    def admitted(self, cancel: threading.Event) -> AbstractContextManager[None]:
        """Held while a take renders (one line when the engine is busy); ``cancel`` is the take's flag, which
        the backend may set itself (a server's time limit: then the take ends with that limit's line)."""

    def forget(self, anchor: str) -> None:
        """Drop the engine's prompts of ``anchor`` (its recording was replaced)."""


class LocalBackend:
    """The model in this process (``--model/--device/--dtype``), loaded once on first use."""

    def __init__(self, config: EngineConfig | None = None, asr_model: Path | None = None) -> None:
        self.config = config or EngineConfig()
        self.asr_model = asr_model
        self._link: EngineLink | None = None
        self._loading = threading.Lock()
        self._rendering = threading.Lock()

    def link(self, progress: Callable[[str], None] | None = None) -> EngineLink:
        with self._loading:
            if self._link is None:
                # lazy: start-up (numpy, pyebur128, scipy)
                from omnistudio.take.link import LocalEngine
                from omnistudio.voices.session import open_engine

                self._link = LocalEngine(open_engine(self.config, progress=progress))
            return self._link

    @contextmanager
    def _one_at_a_time(self) -> Iterator[None]:
        with self._rendering:  # one model, one take at a time: the next call waits its turn
            yield

    def admitted(self, cancel: threading.Event) -> AbstractContextManager[None]:  # noqa: ARG002 - no limit here
        return self._one_at_a_time()

    def forget(self, anchor: str) -> None:
        if self._link is not None:
            with self._rendering:  # between takes
                self._link.forget_voice(anchor)
