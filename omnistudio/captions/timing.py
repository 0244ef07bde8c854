"""Word and sentence times in a finished take, as plain values every client and file format shares.

Times are seconds from the start of the file. A word is a word of the *written* text (what the
producer wrote: "3,2 %" is one word though three are spoken); ``estimated`` words were spread over
their sentence's exact span by syllable count, never measured, and say so."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class WordTime:
    """One written word: ``text`` (as written, with its punctuation), when it is heard."""

    text: str
    start: float
    end: float
    confidence: float | None = None  # the aligner's probability for the word; None when estimated
    estimated: bool = False  # True: spread by syllables inside the sentence's span, not measured
    written_start: int = 0  # character span of the word in the sentence's written text
    written_end: int = 0

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["start"], out["end"] = round(self.start, 3), round(self.end, 3)
        if self.confidence is not None:
            out["confidence"] = round(self.confidence, 3)
        return out


@dataclass(frozen=True)
class SentenceTiming:
    """A sentence's exact span in the finished file (after seams, crossfades, breaths, pauses and
    speed) and its words inside it."""

    index: int  # the sentence's id in its take
    text: str  # as written
    spoken: str  # as the model said it
    lang: str
    start: float
    end: float
    words: tuple[WordTime, ...] = field(default=())

    def as_dict(self) -> dict[str, object]:
        return {"index": self.index, "text": self.text, "spoken": self.spoken, "lang": self.lang,
                "start": round(self.start, 3), "end": round(self.end, 3), "words": [w.as_dict() for w in self.words]}
