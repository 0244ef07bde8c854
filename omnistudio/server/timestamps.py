"""Sentence and word times of a request's take (``timestamps: "sentence" | "word"``), made by the code
``render -o OUT`` makes its sidecar's with, so a request and ``render`` agree exactly.

Each rendered sentence is pushed through the file's stitcher (:func:`~omnistudio.audio.finishing.file_stitcher`
with the take's finishing options) for its exact span, then timed by
:func:`~omnistudio.take.captions.timed_sentences` with the take's lexicon and, for ``"word"``, the server's one
speech model (:func:`server_hearer`: the packaged Whisper or ``$OMNISTUDIO_ASR_MODEL``, loaded when the first
word is asked for, once per process; none installed: every word estimated, and marked so). The work runs on
the take's thread, never on the event loop. Whisper costs about 1 CPU second a sentence: only ``"word"``
pays it; ``"sentence"`` gives the spans alone.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from omnistudio import protocol as wire
from omnistudio.audio.finishing import FinishingOptions, file_stitcher
from omnistudio.captions.timing import SentenceTiming
from omnistudio.take.captions import timed_sentences
from omnistudio.take.pipeline import PlannedSentence
from omnistudio.text.lexicon import Lexicon
from omnistudio.voices.align import Hearer

if TYPE_CHECKING:
    from omnistudio.take.stream import Chunk

_HEARER_LOCK = threading.Lock()
_HEARER: list[Hearer | None] = []  # [] until the first request for words: then [the hearer] or [None]


def server_hearer() -> Hearer | None:
    """The process's speech model for word times (``render --captions``'s: the same choice), made once."""
    with _HEARER_LOCK:
        if not _HEARER:
            # lazy: looked up when called (tests replace it)
            from omnistudio.voices.words import caption_hearer

            _HEARER.append(caption_hearer())
        return _HEARER[0]


class SentenceTimer:
    """Times a take's sentences as they render, in order (one per request's take)."""

    def __init__(self, mode: wire.Timestamps, sample_rate: int, finishing: FinishingOptions,
                 lexicon: Lexicon | None, hearer: Hearer | None = None) -> None:
        self.mode = mode
        self.sample_rate = sample_rate
        self.lexicon = lexicon
        self.hearer = hearer
        self._stitcher = file_stitcher(sample_rate, finishing)

    def time(self, chunk: Chunk) -> SentenceTiming:
        """The span in the file of the sentence ``chunk`` (the take's next one) and, in ``"word"`` mode,
        its words as the file sink records them."""
        sentence = chunk.sentence
        assert isinstance(sentence, PlannedSentence)  # a take's chunks carry its planned sentences
        self._stitcher.push(chunk.pcm, sentence.pause_s, sentence_id=sentence.id, breathe=sentence.breath)
        pcm = chunk.pcm
        (timed,) = timed_sentences(self._stitcher.spans[-1:], [chunk.row()], lambda _k: pcm, self.sample_rate,
                                   self.hearer, self.lexicon, words=self.mode == "word")
        return timed


def sentence_time(timing: SentenceTiming, mode: wire.Timestamps) -> wire.SentenceTime:
    """A timed sentence on the wire: its words (as the sidecar records them) only in ``"word"`` mode."""
    words = [wire.WordTime.model_validate(w.as_dict()) for w in timing.words] if mode == "word" else None
    return wire.SentenceTime(index=timing.index, text=timing.text, start=timing.start, end=timing.end, words=words)
