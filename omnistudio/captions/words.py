"""The written words of a sentence and what is spoken for each, through the text front-end's span map.

A written word is a whitespace-separated piece of the written text, except that the pieces one changed
span covers are one word: "3,2 %" is one word though "tres coma dos por ciento" is five spoken ones.
Each spoken piece (whitespace-separated in :attr:`Spoken.text`) belongs to the written word its range
maps back to (:meth:`Spoken.to_written`); a written word said as nothing ("—") has no spoken pieces."""

from __future__ import annotations

import re
from dataclasses import dataclass

from omnistudio.text import Spoken

_PIECE_RE = re.compile(r"\S+")


@dataclass(frozen=True)
class SpokenPiece:
    """``spoken.text[start:end]``: one whitespace-separated piece of the spoken text."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class WrittenWord:
    """``spoken.written[start:end]`` and the spoken pieces said for it, in order."""

    text: str
    start: int
    end: int
    spoken: tuple[SpokenPiece, ...]

    @property
    def said(self) -> str:
        return " ".join(piece.text for piece in self.spoken)


def spoken_pieces(spoken: Spoken) -> tuple[SpokenPiece, ...]:
    return tuple(SpokenPiece(m.group(), m.start(), m.end()) for m in _PIECE_RE.finditer(spoken.text))


def written_words(spoken: Spoken) -> tuple[WrittenWord, ...]:
    """The written words of ``spoken.written``, in order, each with the spoken pieces said for it."""
    bounds: list[list[int]] = []
    for m in _PIECE_RE.finditer(spoken.written):
        if bounds and any(s.written_start < bounds[-1][1] and s.written_end > m.start() for s in spoken.spans):
            bounds[-1][1] = m.end()  # one changed span covers this piece and the one before: one word
        else:
            bounds.append([m.start(), m.end()])
    owned: list[list[SpokenPiece]] = [[] for _ in bounds]
    for piece in spoken_pieces(spoken):
        w_start, w_end = spoken.to_written(piece.start, piece.end)
        home = next((i for i, (start, end) in enumerate(bounds) if start < max(w_end, w_start + 1) and w_start < end),
                    None)
        if home is None:  # (a range between words: the nearest word before it)
            home = max((i for i, (start, _end) in enumerate(bounds) if start <= w_start), default=0)
        if bounds:
            owned[home].append(piece)
    return tuple(WrittenWord(spoken.written[start:end], start, end, tuple(pieces))
                 for (start, end), pieces in zip(bounds, owned))
