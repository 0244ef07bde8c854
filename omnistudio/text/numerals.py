"""Numbers in running text: ranges and scores, ordinals, decades, and plain numbers (cardinals,
decimals, negatives), each said with :mod:`omnistudio.text.numbers`.

Spanish numbers agree with the noun after them (:mod:`omnistudio.text.agreement`); a year-like number
(four digits, 1000-2099, no separator) never does ("en 2021 hubo"), and English reads it as a year
("in 1998": "nineteen ninety-eight")."""

from __future__ import annotations

import re

from omnistudio.text.agreement import MASCULINE, NEUTRAL, gender_after, next_word, noun_gender
from omnistudio.text.numbers import (MINUS, NUMBER, cardinal, is_year, number, ordinal, parse, plural_decade,
                                     title_case, year)
from omnistudio.text.rules import Rule, per_lang

_TO = {"es": "a", "en": "to"}
_NOTHING = {"0": "nothing"}
# Numbers said as their own words in English news.
SPECIAL_EN = {"911": "nine one one"}

# 2020-2024, 3-1, 2023-24 (hyphen or en dash; not a phone number, which its rule took first).
_RANGE = r"(?<![\w.,\-–])(?P<a>[0-9]{1,4})[-–](?P<b>[0-9]{1,4})(?![\w\-–]|[.,][0-9])"


def _say_range(match: re.Match[str], lang: str) -> str:
    a, b = match.group("a"), match.group("b")
    if is_year(a, lang) and (is_year(b, lang) or len(b) == 2):
        second = year(int(b), lang) if len(b) == 4 else cardinal(b, lang)
        return f"{year(int(a), lang)} {_TO[lang]} {second}"
    gender = gender_after(match.string, match.end(), lang)
    if lang == "en" and "0" in (a, b):  # a score: "two to nothing"
        return f"{_NOTHING.get(a, cardinal(a, lang))} {_TO[lang]} {_NOTHING.get(b, cardinal(b, lang))}"
    return f"{cardinal(a, lang)} {_TO[lang]} {cardinal(b, lang, gender)}"


# 1.º 1.ª 1.er 3.er 1º 1ª (es); 1st 22nd 3rd 4th (en). "1°" is an ordinal only in a date (dates.py).
_ORDINAL_ES = r"(?<![\w.,])(?P<n>[0-9]{1,6})\.?(?P<mark>º|ª|o(?=\s)|a(?=\s)|er(?!\w))"
_ORDINAL_EN = r"(?<![\w.,])(?P<n>[0-9]{1,6})(?P<mark>st|nd|rd|th)(?!\w)"


def _say_ordinal(match: re.Match[str], lang: str) -> str | None:
    value, mark = int(match.group("n")), match.group("mark")
    if lang == "en":
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(value % 10 if value % 100 not in (11, 12, 13) else 0, "th")
        if mark.lower() != suffix:
            return None
        said = ordinal(value, lang)
        return title_case(said) if next_word(match.string, match.end())[:1].isupper() else said  # "Fifth Avenue"
    if mark in ("o", "a") and match.group(0)[len(match.group("n"))] != ".":
        return None  # "3 a 1" is a score in words, not "3a"
    if mark in ("ª", "a"):
        return ordinal(value, lang, gender="f")
    apocope = mark == "er" or noun_gender(next_word(match.string, match.end())) == MASCULINE
    return ordinal(value, lang, apocope=apocope)


# 1990s, '90s (en); Spanish says "los noventa" in words already.
_DECADE_EN = r"(?<![\w.,])(?:(?P<century>1[0-9]|20)|')(?P<decade>[0-9]0)s(?!\w)"


def _say_decade(match: re.Match[str], lang: str) -> str:
    if match.group("century") is None:
        return plural_decade(cardinal(match.group("decade"), lang))
    return plural_decade(year(int(match.group("century") + match.group("decade")), lang))


# A plain number: es 1.245,50 / 2500 / -5; en 1,245.50 / -5. Also es "17.2" (a version: "punto").
_SIGN = r"(?P<sign>(?<![\w)\]])[-−])?"
_PLAIN = {lang: rf"{_SIGN}(?<![0-9])(?<![0-9][.,])(?P<n>{NUMBER[lang]})(?![0-9])(?![.,][0-9])"
          for lang in ("es", "en")}
_DOTTED_ES = r"(?<![\w.,])(?P<a>[0-9]{1,3})\.(?P<b>[0-9]{1,2})(?![\w]|[.,][0-9])"


def _say_number(match: re.Match[str], lang: str) -> str:
    written = match.group("n")
    whole, fraction = parse(written, lang)
    sign = f"{MINUS[lang]} " if match.group("sign") else ""
    if lang == "en" and not sign and written in SPECIAL_EN:
        return SPECIAL_EN[written]
    if not fraction and written.isdigit() and is_year(written, lang):
        return sign + year(int(written), lang)  # en "1998"; es reads it as any number, without agreement
    gender = gender_after(match.string, match.end(), lang) if not sign else NEUTRAL
    return sign + number(written, lang, gender)


def _say_dotted(match: re.Match[str], lang: str) -> str:
    return f"{cardinal(match.group('a'), lang)} punto {cardinal(match.group('b'), lang)}"


RANGE_RULES = (Rule("range", per_lang(_RANGE, _RANGE), _say_range),)
ORDINAL_RULES = (Rule("ordinal", per_lang(_ORDINAL_ES, _ORDINAL_EN), _say_ordinal),
                 Rule("number", per_lang(None, _DECADE_EN), _say_decade))
NUMBER_RULES = (Rule("number", per_lang(_DOTTED_ES, None), _say_dotted),
                Rule("number", per_lang(_PLAIN["es"], _PLAIN["en"]), _say_number))
