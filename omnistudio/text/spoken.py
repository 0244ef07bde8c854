"""What the front-end hands back: the spoken text, and a map from it to the written text.

:class:`Spoken` holds both forms of one text, the regions a rule or a lexicon entry changed
(:class:`Span`, in order, never overlapping) and what it could not resolve (:class:`TextWarning`, e.g. an
unknown symbol kept as written). Offsets are Python string indices into ``written`` (the text with its
whitespace collapsed, as :func:`omnistudio.script.split_sentences` does) and into ``text``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """``written[written_start:written_end]`` is said as ``text[spoken_start:spoken_end]``, by ``rule``
    (``"money"``, ``"number"``, ``"lexicon"``...); ``detail`` names what decided it (a lexicon entry's word)."""

    written_start: int
    written_end: int
    spoken_start: int
    spoken_end: int
    rule: str
    detail: str = ""


@dataclass(frozen=True)
class TextWarning:
    """Something at ``written[written_start:written_end]`` the front-end could not say (kept as written)."""

    written_start: int
    written_end: int
    message: str


@dataclass(frozen=True)
class Spoken:
    """A text as written and as it is to be spoken in ``lang``, with the changed spans in order."""

    written: str
    text: str
    lang: str
    spans: tuple[Span, ...] = ()
    warnings: tuple[TextWarning, ...] = ()

    @property
    def changed(self) -> bool:
        return self.text != self.written

    def to_written(self, spoken_start: int, spoken_end: int) -> tuple[int, int]:
        """The written range a spoken range comes from. An end inside a changed span takes the whole
        written span ("tres coma dos por ciento" all comes from "3,2 %"); text between spans maps one to one."""
        start = self._written_at(spoken_start, start=True)
        return start, max(start, self._written_at(spoken_end, start=False))

    def _written_at(self, offset: int, start: bool) -> int:
        offset = max(0, min(offset, len(self.text)))
        shift = 0  # written offset - spoken offset in the unchanged text after the spans passed
        for span in self.spans:
            if start and span.spoken_start <= offset < span.spoken_end:
                return span.written_start
            if not start and span.spoken_start < offset <= span.spoken_end:
                return span.written_end
            if span.spoken_end > offset or (span.spoken_end == offset and not start):
                break  # (a span said as nothing, where a range ends: the range ends before it)
            shift = span.written_end - span.spoken_end
        return max(0, min(offset + shift, len(self.written)))

    def explain(self) -> list[str]:
        """One line per changed span: ``'3,2 %' -> 'tres coma dos por ciento' (percent)``."""
        lines = []
        for span in self.spans:
            why = f"{span.rule}: {span.detail}" if span.detail else span.rule
            lines.append(f"'{self.written[span.written_start:span.written_end]}' -> "
                         f"'{self.text[span.spoken_start:span.spoken_end]}' ({why})")
        return lines
