"""What a client answers for "how will this text be spoken": the front-end's spoken form of a text
with a lexicon, as the wire's :class:`~omnistudio.protocol.NormalizeResponse` (the server's
``POST /v1/text/normalize`` and the MCP server's ``normalize_text``)."""

from __future__ import annotations

from dataclasses import asdict

from omnistudio.checks import check_language, check_text
from omnistudio.errors import UserError
from omnistudio.protocol import MAX_INPUT_CHARS, NormalizeResponse, SpokenSpan, TextWarningBody
from omnistudio.text.frontend import normalize
from omnistudio.text.lexicon import Lexicon


def normalize_answer(text: str, language: str, lexicon: Lexicon | None) -> NormalizeResponse:
    """The spoken form of ``text`` (checked: not empty, at most MAX_INPUT_CHARS, a known language)."""
    if len(text) > MAX_INPUT_CHARS:
        raise UserError(f"text is {len(text)} characters; the limit is {MAX_INPUT_CHARS}")
    lang = check_language(language)
    spoken = normalize(check_text(text), lang, lexicon)
    return NormalizeResponse(written=spoken.written, spoken=spoken.text, language=lang,
                             spans=[SpokenSpan(**asdict(span)) for span in spoken.spans],
                             warnings=[TextWarningBody(**asdict(w)) for w in spoken.warnings])
