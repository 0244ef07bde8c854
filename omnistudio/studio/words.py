"""The studio's measured words: a speech model that reports how far its measuring got, and the words an
export measured, kept for the highlight when the same rendering plays again."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from omnistudio.captions.timing import WordTime
from omnistudio.take.captions import words_in_sentence


def measured_words(sentences: Sequence[Any], rows: Sequence[Mapping[str, Any]]) -> Iterator[tuple[Any, tuple[WordTime, ...]]]:
    """Each exported sentence whose words were all measured, with its words in seconds from the
    sentence's own start (a sidecar's ``sentences`` ``rows``, in the take's order)."""
    for sentence, row in zip(sentences, rows):
        words = words_in_sentence(row)
        if words is not None and row.get("id") == sentence.id:
            yield sentence, words


class MeasuringHearer:
    """A speech model that says how far the word measuring got (the engine state's detail), one
    sentence at a time: Whisper takes about a second a sentence on a CPU."""

    def __init__(self, hearer: Any, total: int, state: Callable[[str, str], None]) -> None:
        self.hearer, self.total, self.state, self.done = hearer, total, state, 0

    def can_hear(self, lang: str) -> bool:
        self.done += 1
        self.state("rendering", f"caption words {min(self.done, self.total)}/{self.total}: measuring")
        return bool(self.hearer.can_hear(lang))

    def heard_words(self, wave: Any, sample_rate: int, lang: str) -> Any:
        return self.hearer.heard_words(wave, sample_rate, lang)
