"""Estimated word times: a sentence's written words spread over an exact span by syllable count.

Where no aligner can measure a sentence (a language the speech model cannot hear, low confidence), its
words still need times: each written word gets a share of the span ``[start, end]`` proportional to the
syllables of what is spoken for it (so "3,2 %" weighs as "tres coma dos por ciento", seven syllables),
with no gaps, in order. Every such word says ``estimated=True`` and has no confidence: it was never
measured. Pauses inside the sentence are not modelled (a comma takes no time of its own)."""

from __future__ import annotations

from collections.abc import Sequence

from omnistudio.captions.syllables import syllables
from omnistudio.captions.timing import WordTime
from omnistudio.captions.words import WrittenWord, written_words
from omnistudio.errors import UserError
from omnistudio.text import Spoken


def spread(weights: Sequence[float], start: float, end: float) -> list[tuple[float, float]]:
    """``[start, end]`` cut into consecutive pieces in proportion to ``weights`` (all zero: equal pieces)."""
    if end < start:
        raise UserError(f"a word span cannot end before it starts ({start:.3f} s > {end:.3f} s)")
    if not weights:
        return []
    total = float(sum(weights))
    shares = [w / total for w in weights] if total > 0 else [1.0 / len(weights)] * len(weights)
    out: list[tuple[float, float]] = []
    at = 0.0
    for share in shares:
        out.append((start + at * (end - start), start + min(at + share, 1.0) * (end - start)))
        at += share
    out[-1] = (out[-1][0], end)  # no rounding left over: the last word ends with the span
    return out


def weight(word: WrittenWord, lang: str) -> int:
    """A written word's syllables, counted through what is spoken for it."""
    return syllables(word.said, lang)


def estimate_run(words: Sequence[WrittenWord], lang: str, start: float, end: float) -> list[WordTime]:
    """``words`` spread over ``[start, end]`` by syllables, each marked estimated."""
    return [WordTime(w.text, s, e, None, True, w.start, w.end)
            for w, (s, e) in zip(words, spread([weight(w, lang) for w in words], start, end))]


def estimate_words(spoken: Spoken, start: float, end: float) -> tuple[WordTime, ...]:
    """The written words of ``spoken`` (one sentence, :func:`omnistudio.text.normalize`'s answer) spread
    over its exact span ``[start, end]`` (seconds in the file) by syllables, all ``estimated=True``."""
    return tuple(estimate_run(written_words(spoken), spoken.lang, start, end))
