"""The studio's measured words: a speech model that reports how far its measuring got, and the words an
export measured, kept for the highlight when the same rendering plays again."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from omnistudio.captions.timing import SentenceTiming, WordTime
from omnistudio.config import SAMPLE_RATE
from omnistudio.studio.events import StudioState
from omnistudio.studio.playback import SentenceWords, estimated_marks, word_marks
from omnistudio.take.captions import words_in_sentence
from omnistudio.take.link import EngineLink
from omnistudio.take.options import TakeOptions
from omnistudio.take.pipeline import PlannedSentence, cache_key
from omnistudio.take.stream import Chunk
from omnistudio.voices.align import Hearer

if TYPE_CHECKING:
    from omnistudio.voices.asr import HeardWord

log = logging.getLogger(__name__)


def measured_words(sentences: Sequence[PlannedSentence], timed: Sequence[SentenceTiming]
                   ) -> Iterator[tuple[PlannedSentence, tuple[WordTime, ...]]]:
    """Each exported sentence whose words were all measured, with its words in seconds from the
    sentence's own start (the file sink's timed sentences, in the take's order)."""
    for sentence, timing in zip(sentences, timed):
        words = words_in_sentence(timing)
        if words is not None and timing.index == sentence.id:
            yield sentence, words


class MeasuringHearer:
    """A speech model that says how far the word measuring got (the engine state's detail), one
    sentence at a time: Whisper takes about a second a sentence on a CPU."""

    def __init__(self, hearer: Hearer, total: int, state: Callable[[StudioState, str], None]) -> None:
        self.hearer, self.total, self.state, self.done = hearer, total, state, 0

    def can_hear(self, lang: str) -> bool:
        self.done += 1
        self.state("rendering", f"caption words {min(self.done, self.total)}/{self.total}: measuring")
        return bool(self.hearer.can_hear(lang))

    def heard_words(self, wave: np.ndarray, sample_rate: int, lang: str) -> list[HeardWord]:
        return self.hearer.heard_words(wave, sample_rate, lang)


class HeardWords:
    """The words of what is being heard: those an export measured for a rendering (kept here, by the
    rendering's take-cache key), else estimated by syllables over the sentence's audio."""

    def __init__(self, link: Callable[[], EngineLink | None]) -> None:
        self._link = link
        self.measured: dict[tuple[tuple[object, ...], str], tuple[WordTime, ...]] = {}

    def rendering(self, sentence: PlannedSentence, options: TakeOptions) -> tuple[tuple[object, ...], str]:
        """What identifies a sentence's rendering (the take cache's key, and its written text)."""
        link = self._link()
        if link is None:
            raise ValueError("no engine link: nothing has rendered yet")
        return cache_key(link, sentence, options), sentence.text

    def keep(self, sentences: Sequence[PlannedSentence], options: TakeOptions, timed: Sequence[SentenceTiming]) -> None:
        """The words an export measured, for the highlight when the same rendering plays again."""
        for sentence, words in measured_words(sentences, timed):
            self.measured[self.rendering(sentence, options)] = words

    def played(self, chunk: Chunk, start: int, options: TakeOptions) -> SentenceWords:
        """The written words of a sentence queued at player frame ``start`` (its audio starts there, to within
        the stitcher's seam trim and a short pause's crossfade)."""
        sentence = chunk.sentence
        assert isinstance(sentence, PlannedSentence)  # a take's chunks carry its planned sentences
        try:
            measured = self.measured.get(self.rendering(sentence, options))
            if measured is not None:
                return SentenceWords(sentence.text, word_marks(measured, start, 0.0, SAMPLE_RATE))
            return SentenceWords(sentence.text, estimated_marks(sentence.text, sentence.spoken, sentence.lang, start,
                                                                len(chunk.pcm), SAMPLE_RATE, options.lexicon))
        except Exception:  # noqa: BLE001 - a word highlight never stops a take: the sentence is still marked
            log.exception("words of sentence %s not timed", sentence.id)
            return SentenceWords(sentence.text)
