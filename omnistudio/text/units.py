"""Phone numbers, percentages, units of measure and symbols.

Phone numbers are read in their written groups, digit by digit, a comma between groups ("4555-1234":
"cuatro cinco cinco cinco, uno dos tres cuatro"; English says "oh" for 0 and "eight hundred" for a
toll-free 800). Units agree in number and, in Spanish, in gender ("1 kg": "un kilo", "21 t" ...
"veintiuna toneladas"). Spanish "21 %" is "veintiún por ciento" (but "1 %" is "uno por ciento")."""

from __future__ import annotations

import re

from omnistudio.text.agreement import FEMININE, MASCULINE, NEUTRAL
from omnistudio.text.numbers import MINUS, NUMBER, PLUS, cardinal, digits, is_one, number, parse
from omnistudio.text.rules import Rule, both, per_lang

# ------------------------------------------------------------------ phone numbers
_PHONE = (r"(?<![\w+\-–.,/])(?P<p>(?:\+[0-9]{1,3}[ \-]?)?(?:\([0-9]{1,5}\)[ \-]?)?[0-9]{1,5}(?:[ \-][0-9]{2,5}){1,4})"
          r"(?![\w\-–]|[.,][0-9])")
_GROUP_RE = re.compile(r"\+|[0-9]+")


def _say_phone(match: re.Match[str], lang: str) -> str | None:
    written = match.group("p")
    count = sum(c.isdigit() for c in written)
    if count < 7 or not ("+" in written or "(" in written or "-" in written):
        return None
    if not ("+" in written or "(" in written) and " " in written:
        return None  # "en 2021 11-..." is not a number to dial
    parts = _GROUP_RE.findall(written)
    if len(parts) == 2 and all(len(p) == 4 for p in parts) and 1000 <= int(parts[0]) < int(parts[1]) <= 2099:
        return None  # 2020-2024 is a range of years
    said = []
    for part in parts:
        if part == "+":
            said.append(PLUS[lang])
        elif lang == "en" and re.fullmatch(r"[2-9]00", part):
            said.append(f"{cardinal(part[0], 'en')} hundred")
        elif lang == "es" and part == "0800":
            said.append("cero ochocientos")
        else:
            said.append(digits(part, lang, zero="oh" if lang == "en" else None))
    text = ", ".join(said).replace(f"{PLUS[lang]}, ", f"{PLUS[lang]} ")
    return text


# ------------------------------------------------------------------ percentages
_PERCENT_WORD = {"es": "por ciento", "en": "percent"}
_TO = {"es": "a", "en": "to"}


def _percent(lang: str) -> str:
    n = NUMBER[lang]
    return (rf"(?P<sign>(?<![\w)])[-−+])?(?<![0-9.,])(?P<a>{n})(?:[-–](?P<b>{n}))?[ \u00a0\u202f]?%")


def _percent_amount(written: str, lang: str) -> str:
    whole, fraction = parse(written, lang)
    # es "21 %": veintiún por ciento; "1 %" stays "uno por ciento", as newsreaders say it
    gender = MASCULINE if lang == "es" and not fraction and whole != "1" else NEUTRAL
    return number(written, lang, gender)


def _say_percent(match: re.Match[str], lang: str) -> str:
    sign = {"-": MINUS, "−": MINUS, "+": PLUS}.get(match.group("sign") or "", {})
    said = f"{sign[lang]} " if sign else ""
    said += _percent_amount(match.group("a"), lang)
    if match.group("b"):
        said += f" {_TO[lang]} {_percent_amount(match.group('b'), lang)}"
    return f"{said} {_PERCENT_WORD[lang]}"


# ------------------------------------------------------------------ units
# written -> (Spanish one, Spanish many, gender, English one, English many); "" where a language lacks it.
UNITS: dict[str, tuple[str, str, str, str, str]] = {
    "km/h": ("kilómetro por hora", "kilómetros por hora", MASCULINE, "kilometer per hour", "kilometers per hour"),
    "m/s": ("metro por segundo", "metros por segundo", MASCULINE, "meter per second", "meters per second"),
    "mph": ("", "", MASCULINE, "mile per hour", "miles per hour"),
    "km²": ("kilómetro cuadrado", "kilómetros cuadrados", MASCULINE, "square kilometer", "square kilometers"),
    "km2": ("kilómetro cuadrado", "kilómetros cuadrados", MASCULINE, "square kilometer", "square kilometers"),
    "m²": ("metro cuadrado", "metros cuadrados", MASCULINE, "square meter", "square meters"),
    "m2": ("metro cuadrado", "metros cuadrados", MASCULINE, "square meter", "square meters"),
    "m³": ("metro cúbico", "metros cúbicos", MASCULINE, "cubic meter", "cubic meters"),
    "km": ("kilómetro", "kilómetros", MASCULINE, "kilometer", "kilometers"),
    "cm": ("centímetro", "centímetros", MASCULINE, "centimeter", "centimeters"),
    "mm": ("milímetro", "milímetros", MASCULINE, "millimeter", "millimeters"),
    "m": ("metro", "metros", MASCULINE, "meter", "meters"),
    "ha": ("hectárea", "hectáreas", FEMININE, "hectare", "hectares"),
    "kg": ("kilo", "kilos", MASCULINE, "kilogram", "kilograms"),
    "mg": ("miligramo", "miligramos", MASCULINE, "milligram", "milligrams"),
    "g": ("gramo", "gramos", MASCULINE, "gram", "grams"),
    "tn": ("tonelada", "toneladas", FEMININE, "", ""),
    "t": ("tonelada", "toneladas", FEMININE, "", ""),
    "lb": ("libra", "libras", FEMININE, "pound", "pounds"),
    "lbs": ("libra", "libras", FEMININE, "pound", "pounds"),
    "oz": ("onza", "onzas", FEMININE, "ounce", "ounces"),
    "ft": ("pie", "pies", MASCULINE, "foot", "feet"),
    "mi": ("", "", MASCULINE, "mile", "miles"),
    "ml": ("mililitro", "mililitros", MASCULINE, "milliliter", "milliliters"),
    "l": ("litro", "litros", MASCULINE, "", ""),
    "°C": ("grado", "grados", MASCULINE, "degree Celsius", "degrees Celsius"),
    "ºC": ("grado", "grados", MASCULINE, "degree Celsius", "degrees Celsius"),
    "°F": ("grado Fahrenheit", "grados Fahrenheit", MASCULINE, "degree Fahrenheit", "degrees Fahrenheit"),
    "ºF": ("grado Fahrenheit", "grados Fahrenheit", MASCULINE, "degree Fahrenheit", "degrees Fahrenheit"),
    "°": ("grado", "grados", MASCULINE, "degree", "degrees"),
    "kWh": ("kilovatio hora", "kilovatios hora", MASCULINE, "kilowatt-hour", "kilowatt-hours"),
    "MWh": ("megavatio hora", "megavatios hora", MASCULINE, "megawatt-hour", "megawatt-hours"),
    "kW": ("kilovatio", "kilovatios", MASCULINE, "kilowatt", "kilowatts"),
    "MW": ("megavatio", "megavatios", MASCULINE, "megawatt", "megawatts"),
    "GW": ("gigavatio", "gigavatios", MASCULINE, "gigawatt", "gigawatts"),
    "GB": ("gigabyte", "gigabytes", MASCULINE, "gigabyte", "gigabytes"),
    "MB": ("megabyte", "megabytes", MASCULINE, "megabyte", "megabytes"),
    "TB": ("terabyte", "terabytes", MASCULINE, "terabyte", "terabytes"),
    "Mbps": ("megabit por segundo", "megabits por segundo", MASCULINE, "megabit per second", "megabits per second"),
    "hPa": ("hectopascal", "hectopascales", MASCULINE, "hectopascal", "hectopascals"),
    "hs": ("hora", "horas", FEMININE, "", ""),
    "h": ("hora", "horas", FEMININE, "", ""),
    "min": ("minuto", "minutos", MASCULINE, "minute", "minutes"),
    "seg": ("segundo", "segundos", MASCULINE, "", ""),
}


def _units(lang: str) -> str:
    known = [u for u, names in UNITS.items() if names[0 if lang == "es" else 3]]
    alternation = "|".join(re.escape(u) for u in sorted(known, key=len, reverse=True))
    n = NUMBER[lang]
    return (rf"(?P<sign>(?<![\w)])[-−])?(?<![0-9.,])(?P<a>{n})(?:[-–](?P<b>{n}))?"
            rf"[ \u00a0\u202f]?(?P<u>{alternation})(?![\w²³/])")


def _say_unit(match: re.Match[str], lang: str) -> str:
    es_one, es_many, gender, en_one, en_many = UNITS[match.group("u")]
    last = match.group("b") or match.group("a")
    single = is_one(last, lang) and not match.group("b")
    said = f"{MINUS[lang]} " if match.group("sign") else ""
    if match.group("b"):
        said += f"{number(match.group('a'), lang, gender)} {_TO[lang]} "
    said += number(last, lang, gender if lang == "es" else NEUTRAL)
    if lang == "es":
        return f"{said} {es_one if single else es_many}"
    return f"{said} {en_one if single else en_many}"


# ------------------------------------------------------------------ symbols
SYMBOL_WORDS = {"&": ("y", "and"), "+": ("más", "plus"), "=": ("igual a", "equals"), "×": ("por", "times"),
                "@": ("arroba", "at"), "%": ("por ciento", "percent"), "#": ("número", "number")}


def _say_symbol(match: re.Match[str], lang: str) -> str | None:
    symbol = match.group(0)
    if symbol == "#" and not match.string[match.end():match.end() + 1].isdigit():
        return None
    said = SYMBOL_WORDS[symbol][0 if lang == "es" else 1]
    text, start, end = match.string, match.start(), match.end()
    before = " " if start > 0 and not text[start - 1].isspace() else ""
    after = " " if end < len(text) and not text[end].isspace() else ""
    return f"{before}{said}{after}"


PHONE_RULES = (Rule("phone", both(_PHONE), _say_phone),)
PERCENT_RULES = (Rule("percent", per_lang(_percent("es"), _percent("en")), _say_percent),)
UNIT_RULES = (Rule("unit", per_lang(_units("es"), _units("en")), _say_unit),)
SYMBOL_RULES = (Rule("symbol", both(r"[&+=×@%#]"), _say_symbol),)
