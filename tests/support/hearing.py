"""A stand-in speech model for caption words, so no Whisper loads: it hears English, not Spanish (as the
packaged tiny.en), and its "measured" words are the syllable estimate with a confidence, marked measured,
so a word's ``estimated`` flag says which path it took."""

from __future__ import annotations

from typing import Any

import pytest

from omnistudio.captions.estimate import estimate_words
from omnistudio.captions.timing import WordTime


class EnglishOnly:
    def can_hear(self, lang: str) -> bool:
        return lang == "en"


class Aligned:
    """Stands in for ``align_sentence``: each call recorded (samples, language, offset, span), the words
    "measured" (confidence 0.8) where the syllables put them, so a word's estimated flag says which path
    it took."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, float, tuple[float, float]]] = []

    def __call__(self, hearer: Any, pcm: Any, rate: int, spoken: Any, lang: str, offset: float,
                 span: tuple[float, float]) -> tuple[WordTime, ...]:
        assert lang == "en" and rate == 24_000 and len(pcm) > 0  # only what the model hears is aligned
        self.calls.append((len(pcm), lang, offset, span))
        return tuple(WordTime(w.text, w.start, w.end, 0.8, False, w.written_start, w.written_end)
                     for w in estimate_words(spoken, *span))


def stand_in_hearer(monkeypatch: pytest.MonkeyPatch) -> Aligned:
    """``caption_hearer()`` gives :class:`EnglishOnly`; alignment is :class:`Aligned` (returned)."""
    from omnistudio.voices import words

    aligned = Aligned()
    monkeypatch.setattr(words, "caption_hearer", lambda model_dir=None: EnglishOnly())
    monkeypatch.setattr(words, "align_sentence", aligned)
    return aligned
