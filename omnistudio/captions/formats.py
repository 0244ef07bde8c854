"""Caption files: SRT (the ``srt`` library) and WebVTT (``webvtt-py``) from cues, and both read back.

The WebVTT may carry each word's start as a cue timestamp (``Good <00:00:01.200>evening``), which
karaoke-style players use to light the word being spoken; the first word of a cue starts with the
cue, and a word not heard after the one before it gets no timestamp (the spec wants them rising,
inside the cue). Times are written to the millisecond, rounded (the libraries would truncate).
WebVTT text escapes ``& < >`` as the spec asks; SRT text is written as it is.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import srt
import webvtt
from webvtt.models import Timestamp

from omnistudio.captions.cues import CaptionLimits, Cue, build_cues
from omnistudio.captions.timing import SentenceTiming
from omnistudio.errors import UserError

FORMATS = ("srt", "vtt")


@dataclass(frozen=True)
class CaptionOptions:
    """Which caption files to write, the cues' limits, and whether the WebVTT carries word times."""

    formats: tuple[str, ...] = FORMATS
    limits: CaptionLimits = field(default_factory=CaptionLimits)
    vtt_words: bool = False

    def validated(self) -> CaptionOptions:
        if not self.formats or any(f not in FORMATS for f in self.formats):
            raise UserError(f"caption formats {','.join(self.formats) or '(none)'}: use srt, vtt or srt,vtt")
        if self.vtt_words and "vtt" not in self.formats:
            raise UserError("word timestamps go in the WebVTT file: ask for vtt among the caption formats")
        self.limits.validated()
        return self


def check_formats(value: str) -> tuple[str, ...]:
    """``"srt,vtt"`` -> ``("srt", "vtt")``; one clear error for anything else."""
    names = [name.strip().lower().lstrip(".") for name in str(value).split(",")]
    if not any(names) or not all(names):
        raise UserError(f"caption formats {value!r}: give srt, vtt or srt,vtt")
    unknown = next((name for name in names if name not in FORMATS), None)
    if unknown is not None:
        raise UserError(f"unknown caption format '{unknown}': use srt, vtt or srt,vtt")
    return tuple(dict.fromkeys(names))


def caption_texts(sentences: Sequence[SentenceTiming], options: CaptionOptions) -> dict[str, str]:
    """Each asked-for format's file text for ``sentences`` (cues built once, under the options' limits)."""
    options = options.validated()
    cues = build_cues(sentences, options.limits)
    writers = {"srt": lambda: srt_text(cues), "vtt": lambda: vtt_text(cues, options.vtt_words)}
    return {fmt: writers[fmt]() for fmt in options.formats}


def _ms(seconds: float) -> int:
    return max(0, int(round(seconds * 1000)))


def srt_text(cues: Sequence[Cue]) -> str:
    return str(srt.compose([srt.Subtitle(i + 1, timedelta(milliseconds=_ms(c.start)), timedelta(milliseconds=_ms(c.end)),
                                         c.text) for i, c in enumerate(cues)], reindex=False))


def _vtt_time(ms: int) -> str:
    return str(Timestamp.from_seconds(ms / 1000))


def vtt_text(cues: Sequence[Cue], words: bool = False) -> str:
    """The WebVTT document; ``words``: each word's start as a cue timestamp (karaoke)."""

    doc = webvtt.WebVTT()
    for cue in cues:
        start, end = _ms(cue.start), _ms(cue.end)
        lines = _timed_lines(cue, start, end) if words else [_escape(line) for line in cue.lines]
        doc.captions.append(webvtt.Caption(_vtt_time(start), _vtt_time(end), lines))
    return str(doc.content)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _timed_lines(cue: Cue, start: int, end: int) -> list[str]:
    """The cue's lines with a timestamp before each word heard after the one before it (the lines
    are the words' texts joined by spaces; a cue made otherwise is written without timestamps)."""
    if " ".join(w.text for w in cue.words) != " ".join(cue.lines):
        return [_escape(line) for line in cue.lines]
    out, last, k = [], start, 0
    for line in cue.lines:
        parts: list[str] = []
        used = -1
        while k < len(cue.words) and used < len(line):
            word = cue.words[k]
            k += 1
            used += len(word.text) + 1
            at, stamp = _ms(word.start), ""
            if last < at < end:
                stamp, last = f"<{_vtt_time(at)}>", at
            parts.append(stamp + _escape(word.text))
        out.append(" ".join(parts))
    return out


TIMESTAMP = re.compile(r"<(\d{2,}:\d{2}:\d{2}\.\d{3})>")


# ------------------------------------------------------------------------- reading back
@dataclass(frozen=True)
class ReadCue:
    """A cue as a caption file holds it: times in seconds, lines as shown, word timestamps (WebVTT)."""

    start: float
    end: float
    lines: tuple[str, ...]
    word_starts: tuple[float, ...] = ()


def read_srt(text: str) -> list[ReadCue]:
    return [ReadCue(s.start.total_seconds(), s.end.total_seconds(), tuple(s.content.split("\n")))
            for s in srt.parse(text)]


def read_vtt(text: str) -> list[ReadCue]:
    out = []
    for c in webvtt.from_string(text).captions:
        stamps = tuple(Timestamp.from_string(t).in_milliseconds() / 1000 for t in TIMESTAMP.findall(c.raw_text))
        out.append(ReadCue(c.start_time.in_milliseconds() / 1000, c.end_time.in_milliseconds() / 1000,
                           tuple(html.unescape(line) for line in c.text.split("\n")), stamps))
    return out
