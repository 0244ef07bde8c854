"""The studio's commands to its engine thread: one frozen dataclass each, and the queue that carries them.

The UI thread puts commands (:class:`CommandQueue`); the engine thread takes them in order and runs each
(``Studio._run`` matches on the type). Background work (voice builds, the take strip's finishing pass)
gives way to the user: :meth:`CommandQueue.user_waiting` says whether a command other than the background
builds' own wake-up waits, counted as commands come and go (nobody looks inside the queue).
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omnistudio.script import Blend
    from omnistudio.voices.align import Hearer
    from omnistudio.captions.formats import CaptionOptions
    from omnistudio.script import Sentence
    from omnistudio.take.options import TakeOptions
    from omnistudio.voices.resolve import VoiceRef


@dataclass(frozen=True)
class Load:
    """Open the engine (or reach the server), warm it, list the voices."""


@dataclass(frozen=True)
class Quit:
    """End the engine thread."""


@dataclass(frozen=True)
class Reconnect:
    """Offline: look for the engine again (put by the engine thread itself, with backoff: :class:`Retry`)."""


@dataclass(frozen=True)
class Retry:
    """Backoff between looks for an unreachable engine: 0.5 s, doubling, at most 10 s."""

    delay: float = 0.5

    def next(self) -> Retry:
        return Retry(min(self.delay * 2, 10.0))


@dataclass(frozen=True)
class BuildAhead:
    """Idle: build the voices the script and the anchor list want (the background builds' wake-up)."""


@dataclass(frozen=True)
class Prepare:
    """Make these voices ready now (a blend the morph slider picked)."""

    voices: tuple[tuple[VoiceRef, str], ...]


@dataclass(frozen=True)
class Play:
    """Render and play ``sentences`` (``cancel``: this play's stop)."""

    cancel: threading.Event
    sentences: tuple[Sentence, ...]
    asked_at: float  # perf_counter when asked: time to first audio counts from here
    audition: bool
    options: TakeOptions
    base_seed: int | None = None  # the take's base seed (None: the seed policy's; an audition's is fixed)


@dataclass(frozen=True)
class Export:
    """Write ``path`` (and its captions) from what was heard, rendering what was not."""

    sentences: tuple[Sentence, ...]
    path: Path
    options: TakeOptions
    captions: CaptionOptions | None
    hearer: Hearer | None  # the speech model that measures caption words (None: estimated)


# --- the open project's actions (omnistudio.studio.takes runs them on the engine thread)
@dataclass(frozen=True)
class SyncScript:
    """Bring the project's script (and its default voice) up to the editor's (``save``: and on disk)."""

    text: str
    voice: VoiceRef | None
    save: bool = False


@dataclass(frozen=True)
class Regenerate:
    """F9: a new take of sentence ``index`` with a new seed; it plays and becomes the chosen one."""

    index: int
    cancel: threading.Event
    options: TakeOptions


@dataclass(frozen=True)
class StepTake:
    """Alt+Left/Right: the previous (-1) or next (+1) take of sentence ``index``, played."""

    index: int
    offset: int
    cancel: threading.Event
    options: TakeOptions


@dataclass(frozen=True)
class Compare:
    """F10: the chosen take, then the one chosen before it."""

    index: int
    cancel: threading.Event
    options: TakeOptions


@dataclass(frozen=True)
class Choose:
    """Choose ``take_id`` for sentence ``index`` (None: the take Alt+Left/Right is on)."""

    index: int
    take_id: str | None


@dataclass(frozen=True)
class Undo:
    """Back to sentence ``index``'s previous choice."""

    index: int


@dataclass(frozen=True)
class KeepPreset:
    """Write the project's duo presets (``presets.json``), saving the project first if it is new."""

    presets: dict[str, Blend]


ProjectAction = SyncScript | Regenerate | StepTake | Compare | Choose | Undo | KeepPreset
Command = Load | Quit | Reconnect | BuildAhead | Prepare | Play | Export | ProjectAction


class CommandQueue:
    """The engine thread's commands, first in first out, with a count of the user's commands waiting."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Command] = queue.Queue()
        self._lock = threading.Lock()
        self._users = 0  # commands waiting that are not the background builds' wake-up

    def put(self, command: Command) -> None:
        if not isinstance(command, BuildAhead):
            with self._lock:
                self._users += 1
        self._queue.put(command)

    def get(self, timeout: float | None = None) -> Command:
        """The next command (raises ``queue.Empty`` after ``timeout`` seconds with none)."""
        command = self._queue.get(timeout=timeout)
        if not isinstance(command, BuildAhead):
            with self._lock:
                self._users -= 1
        return command

    def empty(self) -> bool:
        """Whether no command waits (the engine thread may still be running the last one)."""
        return self._queue.empty()

    def user_waiting(self) -> bool:
        """Whether a command of the user's waits (background work then gives way)."""
        with self._lock:
            return self._users > 0
