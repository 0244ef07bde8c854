"""The studio's seams to the core: the editor's sentences (with character spans), the anchor rows,
start-up prompts, duos and the finishing options from the settings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from omnistudio.script import Blend
from omnistudio.take.link import AnchorInfo, local_voices


@dataclass(frozen=True)
class Sentence:
    """One sentence of the editor's text, with where it sits in that text."""

    index: int
    text: str
    speaker: str | None  # anchor id, a blend "a+b@0.7", or None for the selected anchor
    lang: str
    start: int  # character offsets in the source text
    end: int
    line: int = 1  # 1-based script line (sets the pause after it)
    blend: Blend | None = None  # the typed blend when ``speaker`` is one

    @property
    def id(self) -> int:
        """The take pipeline's name for the sentence's index."""
        return self.index


AnchorRow = AnchorInfo  # a picker row: id, name, langs, state per language


def parse_script(text: str, lang: str = "en", speakers: Any = None) -> list[Sentence]:
    """Sentences of ``text`` with speaker, language and character offsets in ``text``."""
    from omnistudio.script import Script

    script = Script.parse(text, lang, speakers)
    line_starts = [0]
    for line in text.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    out: list[Sentence] = []
    pos = 0
    for s in script.sentences:
        begin = max(pos, line_starts[min(s.line - 1, len(line_starts) - 1)])
        start, end = _find(text, s.text, begin)
        out.append(Sentence(s.id, s.text, s.speaker, s.lang, start, end, s.line, s.blend))
        pos = max(pos, end)
    return out


def _find(text: str, sentence: str, begin: int) -> tuple[int, int]:
    """Where ``sentence`` (as the parser gives it: whitespace collapsed) is written in ``text`` from
    ``begin``, spaces as typed (two spaces, a tab); (begin, begin) where it is not."""
    found = text.find(sentence, begin)
    if found >= 0:
        return found, found + len(sentence)
    match = re.compile(r"\s+".join(map(re.escape, sentence.split()))).search(text, begin) if sentence.split() else None
    return (match.start(), match.end()) if match else (begin, begin)


def load_anchor_rows(source: Any = None) -> list[AnchorRow]:
    """The roster as picker rows from an engine link (local or remote) or an engine."""
    if hasattr(source, "voices"):
        return list(source.voices().anchors)
    return list(local_voices(source).anchors)


def duos(source: Any = None) -> list[tuple[str, str, float, tuple[str, ...]]]:
    return list(source.voices().duos if hasattr(source, "voices") else local_voices().duos)


def finishing_options(settings: Any) -> Any:
    """The studio settings as render finishing options (target loudness, room tone, breaths)."""
    from omnistudio.audio.finishing import FinishingOptions

    return FinishingOptions(target_lufs=settings.target_lufs, room_tone=settings.room_tone,
                            breaths=settings.breaths, seed=settings.seed)
