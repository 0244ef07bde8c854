"""The paragraph under the editor's cursor, and the edits that rewrite its speaker tag.

The studio's three jobs are bound to that paragraph (one script line): an audition reads it, assigning
an anchor rewrites its tag, and the morph slider shows and rewrites its ``[a+b@alpha]``. The script
syntax stays :mod:`omnistudio.script`'s (``split_story``, ``TAG_RE``, ``parse_tag``); this module only
finds where a line's tag is written and says what to write there instead, as a :class:`TextEdit` the
editor applies (one undo step each). Nothing here knows Textual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from omnistudio.errors import UserError
from omnistudio.script import Blend, Sentence, Tag, parse_tag, speaker_tag_match, split_story, with_preset


@dataclass(frozen=True)
class TextEdit:
    """Replace ``text[start:end]`` with ``insert``."""

    start: int
    end: int
    insert: str

    def apply(self, text: str) -> str:
        return text[:self.start] + self.insert + text[self.end:]


@dataclass(frozen=True)
class Paragraph:
    """One script line: its number (1-based, as sentences carry it), where it starts and ends in the text,
    where its own speaker tag is written (``tag_start == tag_end``: it has none; the point a tag goes),
    and that tag."""

    line: int
    start: int
    end: int
    tag_start: int
    tag_end: int
    tag: Tag | None

    @property
    def blend(self) -> Blend | None:
        return self.tag.blend if self.tag is not None else None


def paragraph_at(text: str, offset: int, presets: Mapping[str, Blend] | None = None) -> Paragraph:
    """The line of ``text`` holding character ``offset`` (a tag that does not parse counts as none; a tag
    naming one of ``presets`` is its blend)."""
    offset = max(0, min(offset, len(text)))
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    end = len(text) if end < 0 else end
    line = text.count("\n", 0, start) + 1
    raw = text[start:end]
    try:
        _story, skip = split_story(raw, line)
    except UserError:
        skip = 0
    body = raw[skip:]
    match = speaker_tag_match(body)
    at = start + skip + (len(body) - len(body.lstrip()))
    if match is None:
        return Paragraph(line, start, end, at, at, None)
    try:
        tag = with_preset(parse_tag(match.group(1), line), presets)
    except UserError:
        return Paragraph(line, start, end, at, at, None)
    return Paragraph(line, start, end, at, start + skip + match.end(), tag)


def sentence_at(sentences: list[Sentence], offset: int) -> Sentence | None:
    """The sentence at character ``offset``, else the next one, else the last (None: no sentences)."""
    return next((s for s in sentences if offset < s.end), sentences[-1] if sentences else None)


def sentences_of(sentences: list[Sentence], paragraph: Paragraph) -> list[Sentence]:
    """The parsed sentences written on ``paragraph``'s line."""
    return [s for s in sentences if s.line == paragraph.line]


def tag_text(speaker: str, lang: str | None) -> str:
    return f"[{speaker}{':' + lang if lang else ''}]"


def assign(paragraph: Paragraph, anchor: str, lang: str | None) -> TextEdit:
    """Speak ``paragraph`` as ``anchor``: its tag rewritten (a blend's, a plain one's), or one put at its
    start; ``lang`` is the language to name in the tag (None: the script's default, which a tag without a
    language means)."""
    return TextEdit(paragraph.tag_start, paragraph.tag_end,
                    tag_text(anchor, lang) + ("" if paragraph.tag is not None else " "))


def with_blend(paragraph: Paragraph, blend: Blend) -> TextEdit:
    """``paragraph``'s tag made ``[a+b@alpha]`` (its language kept); at alpha 1 it still names the partner
    (``@1.00`` is the first anchor alone, as everywhere a blend is read)."""
    lang = paragraph.tag.lang if paragraph.tag is not None else None
    return TextEdit(paragraph.tag_start, paragraph.tag_end,
                    tag_text(blend.key(), lang) + ("" if paragraph.tag is not None else " "))
