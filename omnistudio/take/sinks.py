"""Where a take's audio goes: the live player, a finished file (+ sidecar, + /dev/shm), memory.

A sink gets ``begin(take)``, then for each sentence in order ``chunk(chunk, piece)`` (the rendered
sentence and the live-stitched piece the player gets), then ``tail(pcm)`` (the stitcher's last
samples) and ``end(result)``; or ``abort()`` when the take failed or was cancelled (a file sink then
writes nothing). The server's network stream is one more sink.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from omnistudio.audio.export import check_output_path
from omnistudio.audio.shm import SHM_DIR, check_shm_name, write_shm_blocks
from omnistudio.take.captions import FileExtras, caption_paths, check_caption_paths
from omnistudio.take.delivery import Slate
from omnistudio.take.link import EngineLink, link_record
from omnistudio.take.result import TakeResult
from omnistudio.take.stream import Chunk

if TYPE_CHECKING:
    from omnistudio.audio.finishing import FinishedRender, FinishingOptions
    from omnistudio.audio.monitor import MonitorLevel
    from omnistudio.audio.player import Player
    from omnistudio.captions.formats import CaptionOptions
    from omnistudio.captions.timing import SentenceTiming
    from omnistudio.take.options import TakeOptions
    from omnistudio.text.lexicon import Lexicon
    from omnistudio.voices.align import Hearer

Pcm = NDArray[np.float32]


class SinkTake(Protocol):
    """What a sink reads of the take it is attached to (the pipeline's Take, which imports this module)."""

    @property
    def link(self) -> EngineLink: ...

    @property
    def finishing(self) -> FinishingOptions: ...

    @property
    def options(self) -> TakeOptions: ...


SPOOL_BLOCK = 1 << 18  # frames read back from a take's disk spool at a time (about 11 s, 1 MB)


class Sink:
    """No-op base: override what the sink needs."""

    def begin(self, take: SinkTake) -> None:
        """The take is about to render (its voices are not prepared yet)."""

    def chunk(self, chunk: Chunk, piece: Pcm) -> None:
        """Sentence ``chunk`` is ready; ``piece`` is its live-stitched audio (seams, pause, room tone)."""

    def tail(self, pcm: Pcm) -> None:
        """The stitcher's last samples (the end of the take)."""

    def end(self, result: TakeResult) -> None:
        """Every sentence was delivered."""

    def abort(self) -> None:
        """The take failed or was cancelled: nothing more comes."""


class PlayerSink(Sink):
    """Writes the live-stitched pieces to a :class:`~omnistudio.audio.player.Player` ring.

    ``on_piece(start_frame, end_frame, chunk)`` runs before each piece is queued (the studio maps
    frames to sentences with it); ``cancel`` stops a blocked write; ``drain`` waits for the end.
    ``level``: the monitor plays at the level the take's export will have (its finishing gain, from
    each sentence measured as it is rendered)."""

    def __init__(self, player: Player, cancel: threading.Event | None = None,
                 on_piece: Callable[[int, int, Chunk], None] | None = None, drain: bool = False,
                 level: MonitorLevel | None = None) -> None:
        self.player = player
        self.cancel = cancel or threading.Event()
        self.on_piece = on_piece
        self.drain = drain
        self.level = level
        self.frames = 0

    def _write(self, pcm: Pcm) -> None:
        done = 0
        while done < len(pcm) and not self.cancel.is_set():
            wrote = self.player.write(pcm[done:], timeout=0.1)
            if wrote == 0 and getattr(self.player, "_closed", False):
                return
            done += wrote
        self.frames += done

    def chunk(self, chunk: Chunk, piece: Pcm) -> None:
        if self.level is not None:
            self.level.measure(chunk.pcm)
            piece = self.level.apply(piece)
        if self.on_piece is not None:
            start = self.player.ring.total_written
            self.on_piece(start, start + len(piece), chunk)
        self._write(piece)

    def tail(self, pcm: Pcm) -> None:
        self._write(pcm if self.level is None else self.level.apply(pcm))

    def end(self, result: TakeResult) -> None:
        if self.drain:
            self.player.drain()
        else:
            self.player.finish()

    def abort(self) -> None:
        self.player.finish()


class FileSink(Sink):
    """The finished file: sentences stitched without room tone, normalised to the target loudness
    under the true-peak ceiling, room tone under it, written atomically with its JSON sidecar (and
    /dev/shm/NAME when the finishing options name one). Each sentence's ``words`` go in the sidecar;
    with ``captions``, the caption files (``NAME.srt``, ``NAME.vtt``) are written with the audio, all
    staged then renamed together; ``hearer`` (a speech model) measures the words where it can hear
    them, else they are estimated. The file says what it holds (a marker per sentence, a region per story,
    chapters, loudness, iXML: :mod:`omnistudio.take.delivery`; ``slate`` names its project, take and
    title). Nothing is written if the take fails."""

    def __init__(self, path: Path, extra: dict[str, object] | None = None, shm_root: Path | None = None,
                 source: dict[str, object] | None = None, captions: CaptionOptions | None = None,
                 hearer: Hearer | None = None, slate: Slate | None = None) -> None:
        self.path = Path(path)
        check_output_path(self.path)
        self.captions = captions.validated() if captions is not None else None
        self.hearer = hearer  # the speech model that measures the words (None: estimated)
        if self.captions is not None:
            check_caption_paths(caption_paths(self.path, self.captions.formats))
        self.extra = dict(extra or {})
        self.shm_root = shm_root
        self.source = source  # what the take was made from, kept in the sidecar (batch renders resume by it)
        self.slate = slate or Slate()
        self.finished: FinishedRender | None = None  # once written
        self.sentences: list[SentenceTiming] = []  # once written: where each sentence is, its words
        self._take: SinkTake | None = None

    def begin(self, take: SinkTake) -> None:
        self._take = take

    def end(self, result: TakeResult) -> None:
        if self._take is None:
            raise ValueError("FileSink.end without begin")
        take = self._take
        self.write(result, take.finishing, link_record(take.link), take.options.lexicon)

    def write(self, result: TakeResult, finishing: FinishingOptions, engine: Mapping[str, object] | None = None,
              lexicon: Lexicon | None = None) -> None:
        """Write ``result`` finished with ``finishing`` (``end`` does, for the take it began with; a Ray batch
        does, for a take rendered in another process). ``engine``: what rendered it where the result names
        nothing; ``lexicon``: the one its spoken forms were made with (None: the front-end's own)."""
        # lazy: looked up when called (tests replace it)
        from omnistudio.audio.finishing import Delivery, SidecarRecord, finish_render

        record = SidecarRecord({**result.timings(), **self.extra},
                               result.engine if result.engine is not None else engine, result.options or None,
                               self.source)
        extras = FileExtras(result, self.path, self.captions, self.hearer, lexicon, self.slate, record.engine)
        self.finished = finish_render(result.chunks, Delivery(self.path, result.sample_rate, finishing, record,
                                                              extras, self.shm_root))
        self.sentences = extras.sentences


class ShmSink(Sink):
    """Hands the live-stitched take to another process through /dev/shm/NAME (see docs/shm.md)."""

    def __init__(self, name: str, root: Path | None = None) -> None:
        self.name = check_shm_name(name)
        self.root = root
        self.path: Path | None = None

    def end(self, result: TakeResult) -> None:
        if result.stitched is None:
            raise ValueError("this take result was detached from its stitched audio")
        self.path = write_shm_blocks(self.name, result.frames, result.sample_rate,
                                     result.stitched.blocks(SPOOL_BLOCK), self.root or SHM_DIR)


class MemorySink(Sink):
    """Keeps the live-stitched pieces (tests, a client that wants the whole take in memory)."""

    def __init__(self) -> None:
        self.pieces: list[Pcm] = []
        self.sentences: list[int] = []
        self.ended = self.aborted = False

    def chunk(self, chunk: Chunk, piece: Pcm) -> None:
        self.pieces.append(piece)
        self.sentences.append(chunk.sentence.id)

    def tail(self, pcm: Pcm) -> None:
        self.pieces.append(pcm)

    def end(self, result: TakeResult) -> None:
        self.ended = True

    def abort(self) -> None:
        self.aborted = True

    @property
    def pcm(self) -> Pcm:
        return np.concatenate(self.pieces) if self.pieces else np.zeros(0, dtype=np.float32)


