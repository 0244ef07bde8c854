"""Roman numerals, read only where the words around them say they are numbers.

Spanish: after a name, a regnal number ("Felipe VI": "Felipe sexto", "Juan XXIII": "Juan veintitrés",
ordinals up to ten, cardinals above, feminine after a queen's name: "Isabel II": "Isabel segunda");
after "siglo", a century ("siglo XXI": "siglo veintiuno"); between an article and a capitalised word, an
ordinal ("la II Guerra Mundial": "la segunda Guerra Mundial"). English: after a name, "Charles III":
"Charles the Third"; after "War", "Bowl", "Title"..., a cardinal ("World War Two", "Super Bowl
Fifty-Eight"); before "century", an ordinal. A lone English "I" is a numeral only after a monarch's
name ("Elizabeth I"); anywhere else it is the pronoun. Numerals without such a context are left to the
acronym rule."""

from __future__ import annotations

import re

from omnistudio.text.agreement import FEMININE, MASCULINE
from omnistudio.text.numbers import cardinal, ordinal, title_case
from omnistudio.text.rules import LOOK_BACK, Rule, per_lang

_ROMAN_RE = re.compile(r"(?=[IVXLC])C{0,3}(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})")
_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}

CENTURY_WORDS = {"es": frozenset({"siglo", "siglos"}), "en": frozenset()}
CARDINAL_AFTER = {"es": frozenset({"Fase", "fase", "tomo", "Tomo"}),
                  "en": frozenset({"War", "Bowl", "Title", "Chapter", "Part", "Phase", "Apollo", "Vatican", "Episode",
                                   "Act", "Article", "Volume", "Section", "Stage", "Class", "Level", "Category"})}
FEMININE_NAMES = frozenset("""Isabel María Victoria Catalina Juana Cristina Ana Leonor Margarita Beatriz Elena
                              Urraca Berenguela Mariana Carlota Sofía""".split())
MONARCH_NAMES = frozenset("""Elizabeth Charles James George William Henry Edward Richard Mary Victoria John Louis
                             Napoleon Peter Catherine Alexander Nicholas Frederick Philip Felipe Isabel Juan Carlos
                             Francis Benedict Leo Pius Paul Gregory Alfonso Fernando""".split())
_ARTICLES = {"la": FEMININE, "el": MASCULINE, "La": FEMININE, "El": MASCULINE}


def roman_value(numeral: str) -> int | None:
    """The value of a well-formed numeral of I, V, X, L, C (1-399), else None ("IIII", "VX")."""
    if not numeral or not _ROMAN_RE.fullmatch(numeral):
        return None
    total = 0
    for i, char in enumerate(numeral):
        value = _VALUES[char]
        total += -value if i + 1 < len(numeral) and _VALUES[numeral[i + 1]] > value else value
    return total


_WORD_BEFORE_RE = re.compile(r"([^\W\d_]+) $")
_WORD_AFTER_RE = re.compile(r" ([^\W\d_]+)")


def _say_roman(match: re.Match[str], lang: str) -> str | None:
    numeral = match.group(0)
    value = roman_value(numeral)
    if value is None:
        return None
    text = match.string
    before_m = _WORD_BEFORE_RE.search(text, max(0, match.start() - LOOK_BACK), match.start())
    before = before_m.group(1) if before_m else ""
    after_m = _WORD_AFTER_RE.match(text, match.end())
    after = after_m.group(1) if after_m else ""
    name = len(before) > 1 and before[0].isupper() and before[1:].islower()
    if lang == "es":
        if before in CENTURY_WORDS["es"] and value <= 30:
            return ordinal(value, "es") if value <= 10 else cardinal(value, "es")
        if before in CARDINAL_AFTER["es"] and value <= 100:
            return cardinal(value, "es")
        if before in _ARTICLES and after[:1].isupper() and value <= 100:
            return ordinal(value, "es", _ARTICLES[before])
        if name and before not in _ARTICLES and value < 40 and (numeral != "I" or before in MONARCH_NAMES):
            gender = FEMININE if before in FEMININE_NAMES else MASCULINE
            return ordinal(value, "es", gender) if value <= 10 else cardinal(value, "es")
        return None
    if after == "century" and value <= 30:
        return ordinal(value, "en")
    if before in CARDINAL_AFTER["en"] and value <= 100:
        return title_case(cardinal(value, "en"))
    if name and value < 40 and (numeral != "I" or before in MONARCH_NAMES):
        return f"the {title_case(ordinal(value, 'en'))}"
    return None


_PATTERN = r"(?<![\w&\-])[IVXLC]+(?![\w&\-])"
ROMAN_RULES = (Rule("roman", per_lang(_PATTERN, _PATTERN), _say_roman),)
