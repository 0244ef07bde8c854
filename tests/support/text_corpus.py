"""The text front-end's news corpus (tests/data/text/news_{es,en}.tsv): category, written, spoken."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parents[1] / "data" / "text"


@dataclass(frozen=True)
class CorpusLine:
    number: int  # line in the file, from 1
    category: str
    written: str
    spoken: str


def load_corpus(lang: str) -> list[CorpusLine]:
    """Every line of ``news_{lang}.tsv`` (tab-separated: category, written, spoken as a newsreader says it)."""
    lines = []
    for number, raw in enumerate((CORPUS_DIR / f"news_{lang}.tsv").read_text(encoding="utf-8").splitlines(), 1):
        if raw.strip() and not raw.startswith("#"):
            category, written, spoken = raw.split("\t")
            lines.append(CorpusLine(number, category, written, spoken))
    return lines
