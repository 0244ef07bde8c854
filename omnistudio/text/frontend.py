"""The text front-end: what the model is asked to say for a written text, and a map back.

:func:`normalize` classifies spans of the written text and verbalises each (NeMo's split: tag, then
say), in this order, each step only where no earlier one changed the text:

1. bracketed spans, ``[laughter]`` or CMU phones ``[B EY1 S]``, pass through untouched;
2. control characters are dropped;
3. the lexicon's entries (whole word or phrase; the longest first; a replacement is never read again);
4. the rules, most specific first: web addresses, phone numbers, money, dates and times, percentages,
   units, ranges and scores, ordinals, Roman numerals, abbreviations, acronyms, numbers, symbols;
5. what is left that is a symbol no rule reads (an emoji, "©") is kept as written, with a warning.

It is pure and deterministic, never raises for any text (an unknown language is a ``UserError``), and
compiles its patterns once, at import."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from omnistudio.checks import check_language
from omnistudio.text import dates, money, numerals, roman, units, web, words
from omnistudio.text.lexicon import Entry, Lexicon
from omnistudio.text.rules import Keep, Rule
from omnistudio.text.spoken import Span, Spoken, TextWarning

RULES: tuple[Rule, ...] = (*web.RULES, *units.PHONE_RULES, *money.RULES, *dates.RULES, *units.PERCENT_RULES,
                           *units.UNIT_RULES, *numerals.RANGE_RULES, *numerals.ORDINAL_RULES, *roman.ROMAN_RULES,
                           *words.ABBREVIATION_RULES, *words.ACRONYM_RULES, *words.ALPHANUMERIC_RULES,
                           *numerals.NUMBER_RULES,
                           *units.SYMBOL_RULES)

_BRACKETS_RE = re.compile(r"\[[^\[\]]*\]")
_KEYCAP_RE = re.compile("[0-9#*]\ufe0f?\u20e3")  # "1️⃣": an emoji, not a number
_CONTROL_RE = re.compile(r" ?[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]+")
# A symbol with what clings to it: emoji joiners, variation selectors, skin tones, keycaps, tags.
_CLINGING = frozenset("\u200d\ufe0e\ufe0f\u20e3")
_Found = tuple[int, int, str, str, str]  # written start, end, spoken, rule, detail


class _Marks:
    """The written text's characters that a step has claimed (changed, or protected as they are)."""

    def __init__(self, size: int) -> None:
        self.taken = bytearray(size)
        self.found: list[_Found] = []

    def free(self, start: int, end: int) -> bool:
        return not any(self.taken[start:end])

    def claim(self, start: int, end: int, spoken: str | None = None, rule: str = "", detail: str = "") -> None:
        self.taken[start:end] = b"\x01" * (end - start)
        if spoken is not None:
            self.found.append((start, end, spoken, rule, detail))


@lru_cache(maxsize=4096)
def _entry_pattern(entry: Entry) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(part) for part in entry.word.split())
    before = r"(?<!\w)" if re.match(r"\w", entry.word) else ""
    after = r"(?!\w)" if re.search(r"\w$", entry.word) else ""
    return re.compile(before + body + after, 0 if entry.case_sensitive else re.IGNORECASE)


def _apply_lexicon(written: str, lexicon: Lexicon, lang: str, marks: _Marks) -> None:
    for entry in sorted(lexicon.for_lang(lang), key=lambda e: -len(e.word)):
        for match in _entry_pattern(entry).finditer(written):
            if match.end() > match.start() and marks.free(*match.span()):
                marks.claim(*match.span(), spoken=entry.say, rule="lexicon", detail=entry.word)


def _apply_rule(written: str, rule: Rule, lang: str, marks: _Marks, warnings: list[TextWarning]) -> None:
    pattern = rule.patterns.get(lang)
    pos = 0
    while pattern is not None and (match := pattern.search(written, pos)) is not None:
        start, end = match.span()
        pos = start + 1
        if end == start or not marks.free(start, end):
            continue
        try:
            said = rule.say(match, lang)
        except Exception as error:  # a bug in a rule must not stop a take: keep the text, say so
            warnings.append(TextWarning(start, end, f"could not read '{match.group()}' ({rule.name}: "
                                        f"{type(error).__name__})"))
            marks.claim(start, end)
            pos = end
            continue
        if said is None:
            continue
        if isinstance(said, Keep):
            warnings.append(TextWarning(start, end, said.message))
            marks.claim(start, end)
            pos = end
            continue
        spoken, detail = said if isinstance(said, tuple) else (said, "")
        marks.claim(start, end, spoken=spoken, rule=rule.name, detail=detail)
        pos = end


def _symbol_warnings(written: str, marks: _Marks) -> list[TextWarning]:
    found: list[TextWarning] = []
    start = None
    for i, char in enumerate(written + " "):
        symbol = i < len(written) and not marks.taken[i] and (
            unicodedata.category(char).startswith("S") or (start is not None and char in _CLINGING)
            or (start is not None and "\U000e0020" <= char <= "\U000e007f"))
        if symbol and start is None:
            start = i
        elif not symbol and start is not None:
            found.append(TextWarning(start, i, f"unknown symbol '{written[start:i]}' kept as written"))
            start = None
    return found


def _assemble(written: str, lang: str, marks: _Marks, warnings: list[TextWarning]) -> Spoken:
    parts: list[str] = []
    spans: list[Span] = []
    at = length = 0
    for start, end, said, rule, detail in sorted(marks.found):
        parts.append(written[at:start])
        length += start - at
        spans.append(Span(start, end, length, length + len(said), rule, detail))
        parts.append(said)
        length += len(said)
        at = end
    parts.append(written[at:])
    return Spoken(written, "".join(parts), lang, tuple(spans), tuple(sorted(warnings, key=lambda w: w.written_start)))


def normalize(text: str, lang: str, lexicon: Lexicon | None = None) -> Spoken:
    """``text`` as it is to be spoken in ``lang`` (es|en), with the map back to the written text
    (whitespace collapsed, as :func:`omnistudio.script.split_sentences` does)."""
    lang = check_language(lang)
    written = " ".join(text.split())
    marks = _Marks(len(written))
    warnings: list[TextWarning] = []
    for match in _BRACKETS_RE.finditer(written):
        marks.claim(*match.span())
    for match in _KEYCAP_RE.finditer(written):
        if marks.free(*match.span()):
            marks.claim(*match.span())
            warnings.append(TextWarning(*match.span(), f"unknown symbol '{match.group()}' kept as written"))
    for match in _CONTROL_RE.finditer(written):
        start, end = match.span()
        if marks.free(start, end):
            if start == 0 and end < len(written) and written[end] == " ":
                end += 1  # a control character first: its space goes with it
            marks.claim(start, end, spoken="", rule="control")
    if lexicon is not None and len(lexicon):
        _apply_lexicon(written, lexicon, lang, marks)
    for rule in RULES:
        _apply_rule(written, rule, lang, marks, warnings)
    warnings.extend(_symbol_warnings(written, marks))
    return _assemble(written, lang, marks, warnings)
