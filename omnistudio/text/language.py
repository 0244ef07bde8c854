"""Which language a paragraph reads as, offline: lingua restricted to Spanish and English.

A paragraph read in one language but written in the other is read wrongly ("uno punto dos por
ciento" for "1.2%"), so ``render`` warns about it and the studio's gutter marks it. The detector is
built once, on first use (lingua loads its two n-gram models lazily, about a third of a second);
after that a paragraph costs about a tenth of a millisecond (docs/benchmarks.md).

A text is only called one language when it is long enough and lingua is sure: at least
:data:`MIN_WORDS` words and a confidence of :data:`MIN_CONFIDENCE` (the two values sum to 1, so this
is also the margin over the other language). Below that, :func:`detect` says None and nothing is
flagged: a short line ("OK.", "Buenas noches.") or one of names ("Real Madrid beat Barcelona.").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from lingua import LanguageDetector

MIN_WORDS = 3
MIN_CONFIDENCE = 0.95
NAMES = {"en": "English", "es": "Spanish"}

BRACKETS_RE = re.compile(r"\[[^\[\]\n]*\]")  # inline tags ([laughter], [pause 0.5]) are not words
WORD_RE = re.compile(r"[^\W\d_]+")


class Paragraph(Protocol):
    """What :func:`mismatches` reads of a script sentence (``omnistudio.script.Sentence``)."""

    @property
    def text(self) -> str: ...
    @property
    def lang(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def speaker(self) -> str | None: ...


@dataclass(frozen=True)
class Mismatch:
    """A script line (1-based) whose text reads as ``heard`` but will be read in ``lang`` by ``speaker``
    (None: the default voice)."""

    line: int
    lang: str
    heard: str
    speaker: str | None = None

    def describe(self) -> str:
        """``line 2 reads as English but is read in Spanish (tag it [ruby:en])``."""
        return (f"line {self.line} reads as {NAMES[self.heard]} but is read in {NAMES[self.lang]} "
                f"(tag it [{self.speaker or ''}:{self.heard}])")


@lru_cache(maxsize=1)
def _detector() -> LanguageDetector:
    # lazy: start-up (lingua)
    from lingua import Language, LanguageDetectorBuilder

    return LanguageDetectorBuilder.from_languages(Language.ENGLISH, Language.SPANISH).build()


def detect(text: str) -> str | None:
    """``"es"`` or ``"en"`` for a text that surely reads as that language; None when it is too short
    (fewer than :data:`MIN_WORDS` words) or lingua is not sure."""
    text = BRACKETS_RE.sub(" ", text)
    if len(WORD_RE.findall(text)) < MIN_WORDS:
        return None
    values = _detector().compute_language_confidence_values(text)
    if not values or values[0].value < MIN_CONFIDENCE:
        return None
    return values[0].language.iso_code_639_1.name.lower()


def paragraphs(sentences: Iterable[Paragraph]) -> dict[int, tuple[str | None, str, str]]:
    """Each script line's speaker, language and text (its sentences joined), in order."""
    out: dict[int, tuple[str | None, str, str]] = {}
    for sentence in sentences:
        speaker, lang, text = out.get(sentence.line, (sentence.speaker, sentence.lang, ""))
        out[sentence.line] = (speaker, lang, f"{text} {sentence.text}".strip())
    return out


def mismatches(sentences: Iterable[Paragraph]) -> list[Mismatch]:
    """Every paragraph (script line) of a parsed script that surely reads as the other language than
    the one it will be read in, in script order."""
    found = []
    for line, (speaker, lang, text) in paragraphs(sentences).items():
        heard = detect(text)
        if heard is not None and heard != lang:
            found.append(Mismatch(line, lang, heard, speaker))
    return found


def mismatch_summary(found: list[Mismatch], most: int = 3) -> str:
    """The first ``most`` mismatches in one line (and how many more)."""
    more = len(found) - most
    return "; ".join(m.describe() for m in found[:most]) + (f"; and {more} more" if more > 0 else "")


__all__ = ["MIN_CONFIDENCE", "MIN_WORDS", "Mismatch", "Paragraph", "detect", "mismatch_summary", "mismatches", "paragraphs"]
