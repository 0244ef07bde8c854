"""A take's sentences as its results and files report them: :class:`SentenceRow` (one rendered sentence:
what it said, in which voice, how long it took) and :class:`SentenceText` (what captions and markers
read of a sentence: its id, the text as written, what was said, the language). Typed until they are
written: ``as_dict`` gives the sidecar's row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol, TypeVar


class Written(Protocol):
    """What captions read of a sentence: :class:`SentenceRow`, :class:`SentenceText`."""

    @property
    def id(self) -> int | None: ...  # None: the row named none (matched by its position)

    @property
    def text(self) -> str: ...

    @property
    def spoken(self) -> str: ...

    @property
    def lang(self) -> str: ...


@dataclass(frozen=True)
class SentenceText:
    """A sentence's id in its take (None: a hand-edited row named none), its text as written, what was said
    (empty: the text) and its language."""

    id: int | None
    text: str
    spoken: str
    lang: str

    @classmethod
    def from_row(cls, row: object, position: int) -> SentenceText:
        """A sidecar's row as read back (a hand-edited one may lack fields: with no id it is matched by its
        ``position``; a row that is no JSON object is a TypeError)."""
        if not isinstance(row, Mapping):
            raise TypeError(f"sentence row {position + 1} is not an object")
        sentence_id, text = row.get("id"), str(row.get("text") or "")
        return cls(sentence_id if isinstance(sentence_id, int) else None, text,
                   str(row.get("spoken") or text), str(row.get("lang") or "en"))


def sentence_texts(rows: Sequence[object]) -> list[SentenceText]:
    """A sidecar's ``timings`` rows (or any rows with ``id``, ``text``, ``spoken``, ``lang``) as read back."""
    return [SentenceText.from_row(row, k) for k, row in enumerate(rows)]


@dataclass(frozen=True)
class SentenceRow:
    """One sentence of a take as it rendered (or failed): the sidecar's ``timings.sentences`` row.

    Fields in the order the row is written. ``voice`` and ``seed``: the take's (None for a sentence of a
    plain stream, which has neither); ``render_s``, ``audio_s``, ``rtf``: None when it failed."""

    id: int
    line: int
    speaker: str | None
    lang: str
    text: str
    story: str | None
    spoken: str
    steps: int
    render_s: float | None
    audio_s: float | None
    rtf: float | None
    ready_s: float
    error: str | None
    voice: str | None = None
    seed: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


R = TypeVar("R", bound=Written)


def matched(rows: Sequence[R], ids: Sequence[object]) -> list[R | None]:
    """The row of each sentence id, in order: by id; an id no row has (or none), the row at its position;
    past the last row, None."""
    by_id = {row.id: row for row in rows if row.id is not None}
    found: list[R | None] = []
    for k, sentence_id in enumerate(ids):
        row = by_id.get(sentence_id) if isinstance(sentence_id, int) else None
        found.append(row if row is not None else rows[k] if k < len(rows) else None)
    return found
