"""Numbers as words: cardinals with agreement, decimals, ordinals, years, digit strings.

``num2words`` says the words; this module fixes what it gets wrong for a newsreader: Spanish apocope
("veintiún mil", "veintiún años", "un millón"), feminine hundreds and ones ("doscientas personas",
"veintiuna víctimas"), RAE ordinals 11-19 ("undécimo", "decimotercero"), decimals read as a newsreader
does ("tres coma dos", "one point two five"), and American English without "and" or commas ("one
thousand two hundred forty-five"). A run of more than :data:`LONG_RUN` digits is read digit by digit
(num2words would refuse it or spend its time on it)."""

from __future__ import annotations

import re

from num2words import num2words

from omnistudio.text.agreement import FEMININE, MASCULINE, NEUTRAL

LONG_RUN = 15  # more digits than this (a quadrillion): read one by one
DIGIT_WORDS = {"es": "cero uno dos tres cuatro cinco seis siete ocho nueve".split(),
               "en": "zero one two three four five six seven eight nine".split()}
DECIMAL_WORD = {"es": "coma", "en": "point"}
MINUS = {"es": "menos", "en": "minus"}
PLUS = {"es": "más", "en": "plus"}
# A written number in each language's separators: es 1.245,50 (thousands dot, decimal comma), en 1,245.50.
NUMBER = {"es": r"(?:[0-9]{1,3}(?:\.[0-9]{3})+|[0-9]+)(?:,[0-9]+)?",
          "en": r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?"}
SEPARATORS = {"es": (".", ","), "en": (",", ".")}  # (thousands, decimal)

_SCALE_ES = frozenset({"mil", "millón", "millones", "billón", "billones", "trillón", "trillones"})
_MILLIONS_ES = frozenset({"millón", "millones", "billón", "billones", "trillón", "trillones"})
_ORDINALS_ES = ("", "primero", "segundo", "tercero", "cuarto", "quinto", "sexto", "séptimo", "octavo",
                "noveno", "décimo", "undécimo", "duodécimo", "decimotercero", "decimocuarto", "decimoquinto",
                "decimosexto", "decimoséptimo", "decimoctavo", "decimonoveno")
_TEENS_RE = re.compile(r"décimo ?(" + "|".join(_ORDINALS_ES[1:10]) + ")")  # num2words: "décimoprimero"


def parse(written: str, lang: str) -> tuple[str, str]:
    """A written number's integer digits and decimal digits ("1.245,50", es -> ("1245", "50"))."""
    thousands, decimal = SEPARATORS[lang]
    whole, _, fraction = written.replace(thousands, "").replace("\u00a0", "").replace("\u202f", "") \
        .partition(decimal)
    return whole or "0", fraction


def digits(text: str, lang: str, zero: str | None = None) -> str:
    """Each digit of ``text`` as a word ("0142" -> "cero uno cuatro dos"); ``zero`` replaces "zero"."""
    names = DIGIT_WORDS[lang]
    return " ".join(zero if d == "0" and zero else names[int(d)] for d in text if d.isdigit())


def _english(words: str) -> str:
    return words.replace(",", "").replace(" and ", " ")


def _spanish(words: str, gender: str) -> str:
    tokens = words.split()
    for i, token in enumerate(tokens[:-1]):  # "veintiuno mil" -> "veintiún mil"
        if tokens[i + 1] in _SCALE_ES:
            tokens[i] = {"uno": "un", "veintiuno": "veintiún"}.get(token, token)
    if gender == MASCULINE:
        tokens[-1] = {"uno": "un", "veintiuno": "veintiún"}.get(tokens[-1], tokens[-1])
    elif gender == FEMININE:
        last_million = max((i for i, t in enumerate(tokens) if t in _MILLIONS_ES), default=-1)
        for i in range(last_million + 1, len(tokens)):  # "doscientos millones" stays: millón is masculine
            if tokens[i].endswith("ientos"):
                tokens[i] = tokens[i][:-2] + "as"
        tokens[-1] = {"uno": "una", "veintiuno": "veintiuna", "un": "una", "veintiún": "veintiuna"}.get(
            tokens[-1], tokens[-1])
    return " ".join(tokens)


def cardinal(value: int | str, lang: str, gender: str = NEUTRAL) -> str:
    """A whole number as words; ``gender`` is the agreement of the Spanish noun after it."""
    text = str(value).lstrip("0") or "0"
    if len(text) > LONG_RUN:
        return digits(text, lang)
    words = num2words(int(text), lang=lang)
    return _spanish(words, gender) if lang == "es" else _english(words)


def fraction_words(fraction: str, lang: str) -> str:
    """The digits after the decimal mark: Spanish reads up to three as a number ("coma cincuenta"),
    English and anything with a leading zero digit by digit ("point zero five")."""
    if lang == "es" and len(fraction) <= 3 and not fraction.startswith("0"):
        return cardinal(fraction, lang)
    return digits(fraction, lang)


def number(written: str, lang: str, gender: str = NEUTRAL) -> str:
    """A written number (separators per ``lang``) as words; a decimal takes no agreement."""
    whole, fraction = parse(written, lang)
    if not fraction:
        return cardinal(whole, lang, gender)
    return f"{cardinal(whole, lang)} {DECIMAL_WORD[lang]} {fraction_words(fraction, lang)}"


def is_one(written: str, lang: str) -> bool:
    """Whether a written amount is exactly one (singular unit or currency)."""
    whole, fraction = parse(written, lang)
    return whole.lstrip("0") == "1" and not fraction.strip("0")


def ordinal(value: int, lang: str, gender: str = MASCULINE, apocope: bool = False) -> str:
    """An ordinal ("vigésima primera", "twenty-first"); ``apocope``: Spanish before a masculine noun
    ("primer puesto", "tercer lugar")."""
    if not 0 < value < 10**6:
        return cardinal(value, lang)
    if lang == "en":
        return _english(num2words(value, lang="en", to="ordinal"))
    words = _ORDINALS_ES[value] if value < len(_ORDINALS_ES) else _TEENS_RE.sub(
        lambda m: _ORDINALS_ES[10 + _ORDINALS_ES.index(m.group(1))], num2words(value, lang="es", to="ordinal"))
    if gender == FEMININE:
        return " ".join(w[:-1] + "a" if w.endswith("o") else w for w in words.split())
    if apocope and words.endswith(("primero", "tercero")):
        words = words[:-1]
    return words


def year(value: int, lang: str) -> str:
    """A year as the language says it: "mil novecientos noventa y ocho", "nineteen ninety-eight",
    "two thousand five", "twenty twenty-four"."""
    if lang == "es" or not 1000 <= value <= 2099:
        return cardinal(value, lang)
    return _english(num2words(value, lang="en", to="year")).replace("oh-", "oh ")


def is_year(whole: str, lang: str) -> bool:
    """Four digits a newsreader reads as a year when written without separators (1000-2099)."""
    return len(whole) == 4 and 1000 <= int(whole) <= 2099


def plural_decade(words: str) -> str:
    """ "nineteen ninety" -> "nineteen nineties", "two thousand" -> "two thousands"."""
    if words.endswith("y"):
        return words[:-1] + "ies"
    return words + "s"


def title_case(words: str) -> str:
    """ "fifty-eight" -> "Fifty-Eight" (English numbers in names: "Fifth Avenue", "Super Bowl Fifty-Eight")."""
    return " ".join("-".join(p.capitalize() for p in w.split("-")) for w in words.split())
