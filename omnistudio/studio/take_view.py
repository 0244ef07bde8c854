"""What the studio shows of a take beside its numbers: its waveform and its loudness history (headless).

The waveform (:class:`Shape`) is the peak of every ``PEAK_FRAMES`` frames of the take and where each
sentence lies in it. While the take renders it grows from the pieces the player is given, as each is
queued (``live``); once every sentence has rendered, it is replaced by the samples the export writes
for the same take (:func:`omnistudio.audio.finishing.finished_blocks`: the same stitcher, loudness
normalisation, true-peak ceiling and room tone as ``finish_render``), so what is drawn is what a file
of the take holds. Both share one time line: the file's stitcher places each sentence where the live
one does (room tone, breaths and loudness move no sentence).

The loudness history (:class:`LoudPoint`) is read from the studio's one live meter, the one the LUFS
meter shows: :meth:`TakeView.feed` moves what the output played from the tap ring into that meter (on
the UI's pull, never in the audio callback) and keeps, after each pull, its short-term loudness and
whether a block fed went over the true-peak ceiling, at the take's frame heard (the waveform's
position).
"""

from __future__ import annotations

import bisect
import logging
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from omnistudio.audio.finishing import finished_blocks
from omnistudio.audio.loudness import LoudnessMeter
from omnistudio.audio.profiles import TRUE_PEAK_DBTP
from omnistudio.errors import UserError
from omnistudio.take.result import TakeResult
from omnistudio.take.sinks import Sink
from omnistudio.take.sinks import SinkTake as PlayingTake
from omnistudio.take.stream import Chunk

if TYPE_CHECKING:
    from omnistudio.audio.player import Player
    from omnistudio.audio.ring import Ring

log = logging.getLogger(__name__)

PEAK_FRAMES = 240  # 10 ms at 24 kHz: the waveform's finest step (a column is one or more of them)
HISTORY_MAX = 200_000  # loudness points kept for one take (hours at the UI's 20 Hz pull)


def block_peaks(blocks: Iterable[NDArray[np.float32]], size: int = PEAK_FRAMES) -> NDArray[np.float32]:
    """The peak absolute sample of every ``size`` frames of the concatenated ``blocks`` (the last step
    may be shorter)."""
    peaks: list[NDArray[np.float32]] = []
    rest = np.zeros(0, dtype=np.float32)
    for block in blocks:
        data = np.abs(np.concatenate([rest, np.asarray(block, dtype=np.float32).reshape(-1)]))
        whole = data.size - data.size % size
        if whole:
            peaks.append(data[:whole].reshape(-1, size).max(axis=1))
        rest = data[whole:]
    if rest.size:
        peaks.append(np.array([rest.max()], dtype=np.float32))
    return np.concatenate(peaks).astype(np.float32) if peaks else np.zeros(0, dtype=np.float32)


def column_edges(frames: int, columns: int, size: int = PEAK_FRAMES) -> NDArray[np.int64]:
    """The frame at which each of ``columns`` columns starts, and the end: whole peak steps, at least one
    a column (a take shorter than the strip leaves columns past its end empty)."""
    steps = math.ceil(frames / size)
    edges = np.minimum(np.floor(np.arange(columns + 1) * max(steps, columns) / columns).astype(np.int64), steps)
    bounded: NDArray[np.int64] = np.minimum(edges * size, frames)
    return bounded


@dataclass(frozen=True, eq=False)  # compared by identity: a new take, or its finished samples, is a new Shape
class Shape:
    """A take's waveform: peaks per ``PEAK_FRAMES`` and its sentences (start, end frame, index)."""

    peaks: NDArray[np.float32]
    frames: int
    sentences: tuple[tuple[int, int, int], ...] = ()
    live: bool = True  # True: the pieces queued so far; False: the samples the export writes

    def columns(self, n: int) -> list[float]:
        """The peak of each of ``n`` columns over the take (0 past its end)."""
        edges = column_edges(self.frames, n) // PEAK_FRAMES
        return [float(self.peaks[a:b].max()) if b > a else 0.0 for a, b in zip(edges[:-1], edges[1:])]

    def column_of(self, frame: int, n: int) -> int:
        """The column ``frame`` falls in."""
        edges = column_edges(self.frames, n)
        return max(0, min(n - 1, int(np.searchsorted(edges, frame, side="right")) - 1))

    def frame_of(self, column: int, n: int) -> int:
        """The first frame of column ``column``."""
        return int(column_edges(self.frames, n)[max(0, min(n - 1, column))])

    def sentence_at(self, frame: int) -> int | None:
        """The index of the sentence heard at ``frame`` (the nearest one before it in a pause)."""
        starts = [s for s, _e, _i in self.sentences]
        k = bisect.bisect_right(starts, frame) - 1
        return self.sentences[max(0, k)][2] if self.sentences else None


EMPTY = Shape(np.zeros(0, dtype=np.float32), 0)


@dataclass(frozen=True)
class LoudPoint:
    """The live meter after one block the output played: where in the take, short-term, over the ceiling."""

    frame: int
    short_term: float
    over: bool


@dataclass
class TakeView:
    """The take being played or last played: its :class:`Shape` (written by the engine thread through
    :meth:`sink`, read by the UI) and its loudness history (:meth:`feed`, on the UI's pull)."""

    ceiling: float = TRUE_PEAK_DBTP
    shape: Shape = EMPTY
    origin: int = 0  # the player frame (ring.total_read) the take starts at
    history: list[LoudPoint] = field(default_factory=list)
    _player: Player | None = None  # the player the take was queued on
    _takes: int = 0  # takes begun (a new one starts a new history)
    _fed: tuple[LoudnessMeter, int] | None = None  # the meter and take the history is of

    def sink(self, player: Player, sentences: bool = True, preempted: Callable[[], bool] | None = None) -> Sink:
        """A sink beside the player's: the take's shape as it is queued, then as the export writes it.
        ``sentences`` False (an audition): no sentences to go to. ``preempted`` (the engine thread's "a
        command is waiting"): checked between blocks of the finishing pass (about 0.6 CPU-s per minute of
        take), which gives up at once, the live shape staying, so the next play or export never waits for it."""
        self._player = player
        return _ShapeSink(self, player, sentences, preempted or (lambda: False))

    def position(self, heard: int) -> int:
        """The take's frame heard when the player has played ``heard`` frames in all."""
        return max(0, min(self.shape.frames, heard - self.origin))

    def now(self) -> int:
        """The take's frame being heard now (0 before any take)."""
        return 0 if self._player is None else self.position(self._player.ring.total_read)

    def feed(self, tap: Ring, meter: LoudnessMeter, buf: NDArray[np.float32]) -> None:
        """Move what the output played (``tap``, its copy ring) into ``meter``, then keep a point of history
        at the frame heard: the meter's short-term loudness, and whether a block fed went over the
        ceiling. A new meter or a new take starts a new history."""
        if self._fed != (meter, self._takes):
            self._fed, self.history = (meter, self._takes), []
        fed = over = False
        while True:
            got = tap.read_into(buf)
            if got:
                meter.add(buf[:got])
                fed, over = True, over or meter.last_true_peak() > self.ceiling
            if got < len(buf):
                break
        if fed and len(self.history) < HISTORY_MAX:
            self.history.append(LoudPoint(self.now(), meter.short_term(), over))


class _Preempted(Exception):
    """The finishing pass of the strip's shape gave way to a waiting command."""


class _ShapeSink(Sink):
    def __init__(self, view: TakeView, player: Player, sentences: bool, preempted: Callable[[], bool]) -> None:
        self.view, self.player, self.with_sentences, self.preempted = view, player, sentences, preempted
        self.take: PlayingTake | None = None
        self.peaks: list[NDArray[np.float32]] = []
        self.frames = 0
        self.sentences: list[tuple[int, int, int]] = []

    def begin(self, take: PlayingTake) -> None:
        self.take = take
        self.view.origin = self.player.ring.total_written  # after the last take's flush: this one's frame 0
        self.view._takes += 1  # noqa: SLF001 - the view's own sink
        self.view.shape = EMPTY

    def _add(self, pcm: NDArray[np.float32], sentence: int | None) -> None:
        if sentence is not None and self.with_sentences:
            self.sentences.append((self.frames, self.frames + len(pcm), sentence))
        self.peaks.append(block_peaks([pcm]))  # a piece's last step may be short: close enough while live
        self.frames += len(pcm)
        self.view.shape = Shape(np.concatenate(self.peaks), self.frames, tuple(self.sentences))

    def chunk(self, chunk: Chunk, piece: NDArray[np.float32]) -> None:
        self._add(piece, chunk.sentence.id)

    def tail(self, pcm: NDArray[np.float32]) -> None:
        self._add(pcm, None)

    def end(self, result: TakeResult) -> None:
        if self.take is None:
            return
        try:
            frames = [0]

            def counted(blocks: Iterator[NDArray[np.float32]]) -> Iterator[NDArray[np.float32]]:
                for block in blocks:
                    if self.preempted():
                        raise _Preempted
                    frames[0] += len(block)
                    yield block

            with finished_blocks(result.chunks, result.sample_rate, self.take.finishing) as (blocks, spans):
                peaks = block_peaks(counted(blocks))
        except _Preempted:  # a command waits on the engine thread: it goes first, the live shape stays
            log.debug("the take's finished shape was given up for a waiting command")
            return
        except UserError as exc:  # a silent take has no loudness to normalise: the live shape stays
            log.info("the take's finished shape was not drawn: %s", exc)
            return
        except Exception:  # noqa: BLE001 - what the strip draws never fails the take: the live shape stays
            log.exception("the take's finished shape was not drawn")
            return
        rate = result.sample_rate
        sentences = tuple((round(s.start_s * rate), round(s.end_s * rate), int(s.sentence_id)) for s in spans
                          if s.sentence_id is not None) if self.with_sentences else ()
        self.view.shape = Shape(peaks, frames[0], sentences, live=False)

