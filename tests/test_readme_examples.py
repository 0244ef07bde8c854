"""The README's table of newsroom examples is what the text front-end says: each cell's written side,
normalised in its column's language, gives exactly the spoken side (so the table cannot drift)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from omnistudio.text import normalize

README = Path(__file__).resolve().parents[1] / "README.md"


def examples() -> list[tuple[str, str, str]]:
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index("| | Spanish (es) | English (en) |")
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        _blank, category, es, en, _end = (cell.strip() for cell in line.split("|"))
        rows += [(category, "es", es), (category, "en", en)]
    return rows


def test_the_table_covers_every_category() -> None:
    assert len(examples()) >= 16


@pytest.mark.parametrize(("category", "lang", "cell"), examples())
def test_each_example_is_what_the_front_end_says(category: str, lang: str, cell: str) -> None:
    written, spoken = (re.sub(r"`", "", side).strip() for side in cell.split("→"))
    assert normalize(written, lang).text == spoken, (category, lang)
