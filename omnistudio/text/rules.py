"""What a front-end rule is: a pattern per language and what a match is said as.

Each rule module (numbers, money, dates, units, words, web) holds its patterns and word lists and
exports ``RULES``; :mod:`omnistudio.text.frontend` runs them in its order over the written text. A rule's
``say`` sees the match on the whole written text (``match.string``), so it may look around it (the noun
after a number, the name before a Roman numeral), and answers the spoken form, or ``(spoken, detail)``,
or ``None`` to leave the match as written for the rules after it, or :class:`Keep` to keep it as written
(no later rule reads it) with a warning that says how to have it read."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

@dataclass(frozen=True)
class Keep:
    """A match kept as written, with a warning for the user (what a lexicon entry could say instead)."""

    message: str


Said = str | tuple[str, str] | Keep | None
LOOK_BACK = 64  # characters a rule reads before its match (the word before it): bounded, so a long text stays linear
Say = Callable[[re.Match[str], str], Said]


@dataclass(frozen=True)
class Rule:
    name: str
    patterns: Mapping[str, re.Pattern[str]]  # language -> pattern; a language without one is skipped
    say: Say


def both(pattern: str, flags: int = 0) -> dict[str, re.Pattern[str]]:
    """The same compiled pattern for Spanish and English."""
    compiled = re.compile(pattern, flags)
    return {"es": compiled, "en": compiled}


def per_lang(es: str | None, en: str | None, flags: int = 0) -> dict[str, re.Pattern[str]]:
    """A pattern per language (None: the rule does not apply to it)."""
    return {lang: re.compile(p, flags) for lang, p in (("es", es), ("en", en)) if p is not None}


def at_text_end(match: re.Match[str]) -> bool:
    """Whether only closing punctuation or spaces follow ``match`` (a final abbreviation's dot is also
    the sentence's full stop, and is kept)."""
    return _TAIL_RE.match(match.string, match.end()) is not None


_TAIL_RE = re.compile(r"[ \"'”’»)\]]*\Z")
