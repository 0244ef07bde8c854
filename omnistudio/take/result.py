"""What a finished take reports: :class:`TakeResult` (its own module so the sinks, which the pipeline
imports, can name it)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from omnistudio.take.link import PrepareEvent
from omnistudio.take.rows import SentenceRow

if TYPE_CHECKING:
    from omnistudio.audio.spool import ChunkSpool, PcmSpool


RenderedChunk = tuple[NDArray[np.float32], float, "int | None", bool]  # (pcm, pause after, sentence id, breath)


@dataclass
class TakeResult:
    """What a finished take reports (timings, per-sentence rows) and where its audio waits (on disk).

    Nothing of the take's audio is held in memory: the live-stitched take (what the player got) is in
    ``stitched`` and the sentences for finishing are in ``chunks``, both disk spools, so a long render
    runs in flat memory. ``pcm`` reads the stitched take back whole, for the clients that want it so."""

    stitched: PcmSpool | None  # the live-stitched take (seams, breaths, room tone); None once detached
    frames: int  # length of the stitched take
    sample_rate: int
    chunks: ChunkSpool | list[RenderedChunk]
    sentences: list[SentenceRow]  # in the take's order (a failed sentence's row has its error)
    base_seed: int
    rendered: int  # sentences rendered by the link in this take
    reused: int  # sentences taken from the cache
    steps: int
    ttfa_s: float
    total_s: float
    prepare_s: float
    events: list[PrepareEvent] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)  # ids of failed sentences left out (skip_failed)
    # What the samples depend on besides each sentence's text, voice and seed (in ``sentences``):
    engine: dict[str, object] | None = None  # what rendered it: model, device, dtype, sampler, threads, quantisation
    options: dict[str, object] = field(default_factory=dict)  # seed, num_step, guidance, speed, batch, lang, voice

    @property
    def pcm(self) -> NDArray[np.float32]:
        """The whole stitched take, read back from its spool (memory for the whole take: short takes)."""
        if self.stitched is None:
            raise ValueError("this take result was detached from its stitched audio")
        return self.stitched.read(0, self.frames)

    def detached(self) -> TakeResult:
        """This result without its spools (which are files of this process): the sentences come along
        as arrays, the stitched take is dropped; for sending to another process to be finished."""
        chunks = list(self.chunks)
        return replace(self, stitched=None, chunks=chunks)

    @property
    def audio_s(self) -> float:
        return self.frames / self.sample_rate

    def timings(self) -> dict[str, object]:
        audio = self.audio_s
        return {"ttfa_s": round(self.ttfa_s, 4), "total_s": round(self.total_s, 4), "audio_s": round(audio, 3),
                "rtf": round(self.total_s / audio, 4) if audio else None, "prepare_s": round(self.prepare_s, 4),
                "rendered": self.rendered, "reused": self.reused, "skipped": [i + 1 for i in self.skipped],
                "sentences": [row.as_dict() for row in self.sentences]}
