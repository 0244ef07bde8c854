"""Stories to delivered files, one at a time in running-order order, on a worker thread that owns the link.

Each story is a take (its paragraphs as script lines, its voice and language, the gateway's finishing
profile) written by the take pipeline's :class:`~omnistudio.take.sinks.FileSink` to
``DELIVERY/<running order>/<story>.wav`` with its sidecar (and captions when asked): staged and renamed
together, so a file is never announced before it is whole. The take cache is shared: a story rendered
again with the same text, voice and options costs nothing. A story changed or deleted while it renders
is cancelled within a diffusion step (and queued again when it changed).

What happens to each story goes to ``report`` (a :class:`StoryRender`), from this thread: the gateway hands
it to its event loop.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from omnistudio.errors import Cancelled, UserError, describe
from omnistudio.mos.rundown import RunningOrder, Story
from omnistudio.voices.resolve import parse_voice

if TYPE_CHECKING:
    from omnistudio.captions.formats import CaptionOptions
    from omnistudio.take.link import EngineLink
    from omnistudio.take.options import TakeOptions

log = logging.getLogger("omnistudio.mos")
Key = tuple[str, str]  # (roID, storyID)
SAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class StoryRender:
    """A story's render as it stands: ``status`` rendering, ready, error or cancelled."""

    ro_id: str
    story_id: str
    status: Literal["rendering", "ready", "error", "cancelled"]
    fingerprint: str = ""
    path: str = ""
    frames: int = 0
    sample_rate: int = 24_000
    reason: str = ""


def safe_name(value: str) -> str:
    """A file name for an ID: its safe characters, and a short hash when any had to go."""
    cleaned = SAFE_RE.sub("_", value).strip("._") or "id"
    return cleaned if cleaned == value else f"{cleaned[:60]}-{hashlib.sha256(value.encode()).hexdigest()[:8]}"


def delivery_path(folder: Path, ro_id: str, story_id: str, suffix: str = ".wav") -> Path:
    return folder / safe_name(ro_id) / (safe_name(story_id) + suffix)


class StoryRenderer:
    """The render queue: ``submit`` a story (again), ``cancel`` one, ``close`` at the end."""

    def __init__(self, link: EngineLink, options: TakeOptions, folder: Path, lookup: Callable[[Key], tuple[RunningOrder, Story] | None],
                 report: Callable[[StoryRender], None], captions: CaptionOptions | None = None, suffix: str = ".wav") -> None:
        # lazy: start-up (numpy, pyebur128, scipy)
        from omnistudio.take.pipeline import TakeCache

        self.link, self.options, self.folder = link, options, Path(folder)
        self.lookup, self.report, self.captions, self.suffix = lookup, report, captions, suffix
        self.cache = TakeCache()
        self._queue: list[Key] = []
        self._lock = threading.Condition()
        self._current: Key | None = None
        self._cancel = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="mos-renderer", daemon=True)
        self._thread.start()

    def submit(self, key: Key) -> None:
        with self._lock:
            if key == self._current:
                self._cancel.set()  # changed while rendering: stop, and render it again
            if key not in self._queue:
                self._queue.append(key)
            self._lock.notify()

    def cancel(self, key: Key) -> None:
        with self._lock:
            if key in self._queue:
                self._queue.remove(key)
            if key == self._current:
                self._cancel.set()

    def pending(self) -> list[Key]:
        with self._lock:
            return list(self._queue) + ([self._current] if self._current else [])

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._cancel.set()
            self._lock.notify()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                key = self._queue.pop(0)
                self._current = key
                self._cancel.clear()
            try:
                self._render(key)
            except Exception as exc:  # noqa: BLE001 - a story's failure is its object's error, never the gateway's
                log.exception("story %s/%s failed", *key)
                self.report(StoryRender(*key, status="error", reason=_reason(exc)))
            finally:
                with self._lock:
                    self._current = None

    def _render(self, key: Key) -> None:
        # lazy: start-up (numpy, pyebur128, scipy)
        from omnistudio.take.delivery import Slate
        from omnistudio.take.pipeline import build_take
        from omnistudio.take.sinks import FileSink

        found = self.lookup(key)
        if found is None or not found[1].text:
            return  # deleted, or no text yet
        ro, story = found
        fingerprint = story.fingerprint(ro)
        self.report(StoryRender(*key, status="rendering", fingerprint=fingerprint))
        voice, lang = story.voice or ro.voice, story.lang or ro.lang
        options = self.options
        try:
            if voice:
                ref, voice_lang = parse_voice(voice)
                options = replace(options, voice=ref, lang=lang or voice_lang or options.lang)
            elif lang:
                options = replace(options, lang=lang)
            path = delivery_path(self.folder, *key, self.suffix)
            path.parent.mkdir(parents=True, exist_ok=True)
            sink = FileSink(path, captions=self.captions,
                            slate=Slate(project=ro.slug or ro.id, title=story.slug or story.id,
                                              take=f"{ro.id}/{story.id}"))
            started = time.perf_counter()
            take = build_take(self.link, story.text, options, self.cache, base_seed=options.seed)
            result = take.run([sink], cancel=self._cancel)
        except Cancelled:
            self.report(StoryRender(*key, status="cancelled", fingerprint=fingerprint))
            return
        except UserError as exc:
            self.report(StoryRender(*key, status="error", fingerprint=fingerprint, reason=str(exc)))
            return
        log.info("story %s/%s: %.2f s of audio in %.2f s -> %s", *key, result.audio_s,
                 time.perf_counter() - started, path)
        # lazy: start-up (soundfile)
        import soundfile as sf

        info = sf.info(str(path))  # the file's own length and rate (longer than the take; a rule's 48 kHz)
        self.report(StoryRender(*key, status="ready", fingerprint=fingerprint, path=str(path.resolve()),
                             frames=int(info.frames), sample_rate=int(info.samplerate)))


def _reason(exc: BaseException) -> str:
    return describe(exc)
