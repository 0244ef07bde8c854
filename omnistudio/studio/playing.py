"""Playing a take through the studio's player (engine thread): the one way a play of the script, an
audition, a project take (F9, Alt+Left/Right, F10) and an export report what they do.

:class:`TakePlayer` holds what a play touches and nothing else: the player (reopened when the output
device changes, so it is asked for each time), the schedule of what plays when (the editor's highlight),
the take strip, the engine state and the events' way out. A play runs inside :meth:`TakePlayer.playing`:
"rendering" while it runs, then "ready" and :class:`~omnistudio.studio.events.PlaybackFinished`
(cancelled unless it ran to its end)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from omnistudio.audio.monitor import MonitorLevel
from omnistudio.studio.events import PlaybackFinished, Preparing, SentenceRendered, StudioEvent, StudioState
from omnistudio.errors import Unavailable
from omnistudio.take.link import PrepareEvent
from omnistudio.take.sinks import PlayerSink
from omnistudio.take.stream import Chunk

if TYPE_CHECKING:
    import threading

    from omnistudio.audio.player import Player
    from omnistudio.studio.playback import Schedule
    from omnistudio.studio.take_view import TakeView
    from omnistudio.take.pipeline import Take, TakeResult

OnPiece = Callable[[int, int, Chunk], None]  # where a sentence's live-stitched piece lands in the output


class TakePlayer:
    """Plays takes through the player, schedules what is heard, feeds the take strip, reports progress."""

    def __init__(self, player: Callable[[], Player | None], schedule: Schedule, view: TakeView,
                 preempted: Callable[[], bool], report: Callable[[StudioEvent], None],
                 set_state: Callable[[StudioState, str], None]) -> None:
        self._player, self.schedule, self.view, self._preempted = player, schedule, view, preempted
        self._report, self._set_state = report, set_state
        self.rendering = False  # a play renders (the quit dialog and the background builds read it)

    def player(self) -> Player:
        """The player (opened when the studio starts)."""
        player = self._player()
        if player is None:
            raise Unavailable("the audio output is not open yet")
        return player

    def busy(self) -> bool:
        """A play renders, or the player has not played all it was given yet."""
        player = self._player()
        return self.rendering or (player is not None and player.ring.total_read < self.schedule.end)

    @contextmanager
    def playing(self) -> Iterator[None]:
        """The studio is "rendering" for the block; the play is reported finished after it (cancelled unless
        the block ran to its end)."""
        self._set_state("rendering", "")
        self.rendering, finished = True, False
        try:
            yield
            finished = True
        finally:
            self.rendering = False
            self._set_state("ready", "")
            self._report(PlaybackFinished(cancelled=not finished))

    def run(self, take: Take, cancel: threading.Event, on_piece: OnPiece | None = None,
            sentences: bool = True) -> TakeResult:
        """Run ``take`` (cache hits or rendered) into the player at the export's level (the monitor is what
        a file will be) and the take strip; ``on_piece``: each sentence's place in the output (default: the
        schedule's, by sentence id); ``sentences``: the strip marks sentences (not for an audition)."""
        player = self.player()
        level = MonitorLevel.of(take.finishing, take.link.sample_rate)
        placed = on_piece or (lambda start, end, chunk: self.schedule.add(start, end, chunk.sentence.id))
        return take.run([PlayerSink(player, cancel, placed, level=level),
                         self.view.sink(player, sentences=sentences, preempted=self._preempted)],
                        progress=self.preparing, cancel=cancel, on_chunk=self.rendered)

    def preparing(self, event: PrepareEvent) -> None:
        """A take's prepare phase: voice ``done`` of ``total``, in the engine state's detail too."""
        self._report(Preparing(event.done, event.total, event.voice, event.lang, event.action, event.describe()))
        if event.action != "done":
            self._set_state("rendering", event.describe())

    def rendered(self, chunk: Chunk) -> None:
        t = chunk.timings
        if chunk.ok and t is not None:
            self._report(SentenceRendered(chunk.sentence.id, t.wall_s, t.audio_s, t.rtf))
