"""XML a user hands us (a PLS lexicon, an SSML request), parsed with defusedxml: a DTD or an entity
declaration (the "billion laughs", an external entity reading another file) is refused with one line
before anything expands. One parser for every such document."""

from __future__ import annotations

from typing import Any

import defusedxml
from defusedxml import ElementTree as SafeTree

from omnistudio.errors import UserError


def parse_untrusted(data: str | bytes, what: str, needs: str, forbid_dtd: bool = False) -> Any:
    """The root element of ``data``, or one :class:`UserError` line: ``what`` names the document
    ("SSML", "lexicon.pls"), ``needs`` what has no use for entities ("a pronunciation lexicon");
    ``forbid_dtd``: a DOCTYPE is refused too, entities or not."""

    try:
        return SafeTree.fromstring(data, forbid_dtd=forbid_dtd)
    except defusedxml.DefusedXmlException as exc:
        declared = "a DTD" if isinstance(exc, defusedxml.DTDForbidden) else (
            f"the XML entity '{exc.name}'" if hasattr(exc, "name") else "an external XML reference")
        raise UserError(f"{what} refused: it declares {declared} (an entity can expand without bound or read "
                        f"other files); {needs} needs none") from None
    except SafeTree.ParseError as exc:
        raise UserError(f"{what} is not well-formed XML: {exc}") from None


def local_name(tag: str) -> str:
    """A tag without its namespace (``{ns}lexeme`` -> ``lexeme``)."""
    return tag.rpartition("}")[2]
