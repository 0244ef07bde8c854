"""What the editor's gutter shows of each paragraph's language (the app calls it on edits, debounced)."""

from __future__ import annotations

from omnistudio.errors import UserError
from omnistudio.script import parse_script
from omnistudio.text.language import mismatches, paragraphs


def paragraph_languages(text: str, default_lang: str) -> dict[int, tuple[str, bool]]:
    """Per editor row (0-based) that holds a paragraph: the language it is read in, and True where its text
    surely reads as the other one. {} for a script that does not parse (yet: half typed) or is empty.

    The first call loads the language models (about half a second): call it off the UI thread."""
    try:
        sentences = parse_script(text, default_lang).sentences
    except UserError:
        return {}
    wrong = {m.line for m in mismatches(sentences)}
    return {line - 1: (lang, line in wrong) for line, (_speaker, lang, _text) in paragraphs(sentences).items()}


__all__ = ["paragraph_languages"]
