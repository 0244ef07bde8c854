"""Dates and times.

Dates: Spanish writes day/month ("14/10", "14/10/2026": "catorce de octubre de dos mil veintiséis";
the first of a month is "primero", as in Argentina: "1.º de mayo", "1° de mayo", "el 1 de mayo");
English writes month/day and names months ("Oct. 14, 2026": "October fourteenth, twenty twenty-six";
"14 October": "the fourteenth of October"). Times: Spanish "15:30 h" is "quince y treinta horas", "3:30
p. m." is "tres y treinta de la tarde" (the hour is feminine: "la una", "las veintiuna"); English
"9am" is "nine A M", "9:05" "nine oh five", "9:00" "nine o'clock"."""

from __future__ import annotations

import re

from omnistudio.text.agreement import FEMININE
from omnistudio.text.numbers import cardinal, ordinal, year
from omnistudio.text.rules import Rule, at_text_end, per_lang

MONTHS = {"es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split(),
          "en": ("January February March April May June July August September October November "
                 "December").split()}
# English month abbreviations (AP style and the usual three letters), with their dot.
MONTH_ABBREVIATIONS = {"Jan.": 1, "Feb.": 2, "Mar.": 3, "Apr.": 4, "Jun.": 6, "Jul.": 7, "Aug.": 8,
                       "Sep.": 9, "Sept.": 9, "Oct.": 10, "Nov.": 11, "Dec.": 12}
_MONTH_ES = "|".join(MONTHS["es"] + ["setiembre"])
_MONTH_EN = "|".join([*(re.escape(a) for a in sorted(MONTH_ABBREVIATIONS, key=len, reverse=True)), *MONTHS["en"]])


def _month_number(word: str) -> int:
    if word in MONTH_ABBREVIATIONS:
        return MONTH_ABBREVIATIONS[word]
    return MONTHS["en"].index(word) + 1


def _full_year(written: str) -> int:
    value = int(written)
    return value if len(written) == 4 else (2000 + value if value < 50 else 1900 + value)


def _day_es(day: int) -> str:
    return "primero" if day == 1 else cardinal(day, "es")


# 14/10, 14/10/2026, 14/10/26 (es: day/month); 10/14/2026 (en: month/day). "24/7" is not a date.
_NUMERIC = (r"(?<![\w./,])(?P<a>[0-9]{1,2})/(?P<b>[0-9]{1,2})(?:/(?P<y>[0-9]{4}|[0-9]{2}))?"
            r"(?![\w/]|[.,][0-9])")
_ROUND_THE_CLOCK = {"es": "las veinticuatro horas, los siete días", "en": "twenty-four seven"}


def _say_numeric(match: re.Match[str], lang: str) -> str | None:
    a, b = int(match.group("a")), int(match.group("b"))
    if (a, b) == (24, 7) and not match.group("y"):
        return _ROUND_THE_CLOCK[lang]
    if (a, b) == (9, 11) and lang == "en" and not match.group("y"):
        return "nine eleven"  # the attacks, not a date read out
    day, month = (a, b) if lang == "es" else (b, a)
    if not (1 <= day <= 31 and 1 <= month <= 12):
        return None
    written_year = match.group("y")
    if lang == "es":
        said = f"{_day_es(day)} de {MONTHS['es'][month - 1]}"
        return f"{said} de {year(_full_year(written_year), 'es')}" if written_year else said
    said = f"{MONTHS['en'][month - 1]} {ordinal(day, 'en')}"
    return f"{said}, {year(_full_year(written_year), 'en')}" if written_year else said


# es: "14 de octubre", "1.º de mayo", "1° de mayo" (the number only; "de octubre" stays as written).
_DAY_OF_MONTH_ES = rf"(?<![\w.,])(?P<d>[0-9]{{1,2}})(?:\.?º|°|\.?o)?(?= de (?:{_MONTH_ES})\b)"


def _say_day_es(match: re.Match[str], lang: str) -> str | None:
    day = int(match.group("d"))
    return _day_es(day) if 1 <= day <= 31 else None


# en: "Oct. 14", "October 14th, 2026"; "14 October 2026".
_MONTH_DAY_EN = (rf"(?<!\w)(?P<m>{_MONTH_EN}) (?P<d>[0-9]{{1,2}})(?:st|nd|rd|th)?(?:, (?P<y>[0-9]{{4}}))?"
                 r"(?![0-9]|[.,][0-9])")
_DAY_MONTH_EN = (rf"(?<![\w.,])(?P<the>(?:the )?)(?P<d>[0-9]{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<m>"
                 rf"{'|'.join(MONTHS['en'])})(?: (?P<y>[0-9]{{4}}))?(?!\w)")


def _say_month_day(match: re.Match[str], lang: str) -> str | None:
    day = int(match.group("d"))
    if not 1 <= day <= 31:
        return None
    month = MONTHS["en"][_month_number(match.group("m")) - 1]
    said = f"{month} {ordinal(day, 'en')}"
    return f"{said}, {year(int(match.group('y')), 'en')}" if match.group("y") else said


def _say_day_month(match: re.Match[str], lang: str) -> str | None:
    day = int(match.group("d"))
    if not 1 <= day <= 31:
        return None
    said = f"the {ordinal(day, 'en')} of {match.group('m')}"
    return f"{said} {year(int(match.group('y')), 'en')}" if match.group("y") else said


# Times. es: 15:30, 15:30 h, 15.30 h, 3:30 p. m., 9 a. m.; en: 9am, 9 a.m., 9:30 p.m., 15:30.
_MERIDIEM = r"(?P<mer>[ap])\.?[ \u00a0]?m\.?(?!\w)"
_CLOCK = r"(?<![\w.,:])(?P<h>[0-9]{1,2})(?P<sep>[:.])(?P<m>[0-9]{2})"
_TIME = {"es": (rf"{_CLOCK}(?:[ \u00a0]?(?:(?P<hs>h|hs|hrs)\.?(?!\w)|{_MERIDIEM}))?(?![\w:]|[.,][0-9])"
                rf"|(?<![\w.,:])(?P<h2>[0-9]{{1,2}})[ \u00a0]?(?P<mer2>[ap])\.?[ \u00a0]?m\.?(?!\w)"),
         "en": (rf"{_CLOCK}(?:[ \u00a0]?{_MERIDIEM})?(?![\w:]|[.,][0-9])"
                rf"|(?<![\w.,:])(?P<h2>[0-9]{{1,2}})[ \u00a0]?(?P<mer2>[ap])\.?[ \u00a0]?m\.?(?!\w)")}
_EN_MERIDIEM = {"a": "A M", "p": "P M"}


def _part_of_day_es(hour: int, meridiem: str) -> str:
    if meridiem == "a":
        return "de la noche" if hour == 12 else "de la madrugada" if hour < 6 else "de la mañana"
    return "del mediodía" if hour == 12 else "de la tarde" if hour < 8 else "de la noche"


def _say_time(match: re.Match[str], lang: str) -> str | None:
    groups = match.groupdict()
    hour = int(groups["h"] or groups["h2"])
    minute = int(groups["m"] or 0)
    meridiem = (groups.get("mer") or groups.get("mer2") or "").lower()
    if minute > 59 or hour > (12 if meridiem else 24) or (meridiem and hour == 0):
        return None
    if groups.get("sep") == "." and not (groups.get("hs") or meridiem):
        return None  # "17.25" is a number, not a time
    if lang == "es":
        said = cardinal(hour, "es", FEMININE)  # la una, las veintiuna
        said += f" y {cardinal(minute, 'es')}" if minute else ""
        said += " horas" if groups.get("hs") else f" {_part_of_day_es(hour, meridiem)}" if meridiem else ""
    else:
        said = cardinal(hour, "en")
        if minute:
            said += f" oh {cardinal(minute, 'en')}" if minute < 10 else f" {cardinal(minute, 'en')}"
        elif not meridiem:
            said += " o'clock" if hour <= 12 else " hundred"
        said += f" {_EN_MERIDIEM[meridiem]}" if meridiem else ""
    return said + "." if match.group(0).endswith(".") and at_text_end(match) else said


RULES = (Rule("date", per_lang(_NUMERIC, _NUMERIC), _say_numeric),
         Rule("date", per_lang(_DAY_OF_MONTH_ES, _MONTH_DAY_EN), lambda m, lang: (
             _say_day_es(m, lang) if lang == "es" else _say_month_day(m, lang))),
         Rule("date", per_lang(None, _DAY_MONTH_EN), _say_day_month),
         Rule("time", per_lang(_TIME["es"], _TIME["en"]), _say_time))
