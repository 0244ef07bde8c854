"""Money: an amount with its currency, said in the locale's way.

Spanish is rioplatense by default: ``$`` is pesos, ``US$``, ``u$s``, ``U$S`` and ``USD`` are dollars;
"US$ 1.245,50" is "mil doscientos cuarenta y cinco dólares con cincuenta centavos", "US$ 3,5 millones"
is "tres coma cinco millones de dólares", "£ 200" agrees with "libras" ("doscientas libras"). English:
``$`` is dollars; "$5,123.45" is "five thousand one hundred twenty-three dollars and forty-five cents",
"$1.2bn" is "one point two billion dollars"."""

from __future__ import annotations

import re
from dataclasses import dataclass

from omnistudio.text.agreement import FEMININE, MASCULINE
from omnistudio.text.numbers import DECIMAL_WORD, NUMBER, cardinal, fraction_words, is_one, number, parse
from omnistudio.text.rules import Rule, per_lang


@dataclass(frozen=True)
class Currency:
    one: str
    many: str
    gender: str = MASCULINE  # Spanish agreement of the amount
    cent: str = ""
    cents: str = ""


CURRENCIES: dict[str, dict[str, Currency]] = {
    "es": {"ARS": Currency("peso", "pesos", cent="centavo", cents="centavos"),
           "USD": Currency("dólar", "dólares", cent="centavo", cents="centavos"),
           "EUR": Currency("euro", "euros", cent="céntimo", cents="céntimos"),
           "GBP": Currency("libra", "libras", FEMININE, "penique", "peniques"),
           "BRL": Currency("real", "reales", cent="centavo", cents="centavos"),
           "JPY": Currency("yen", "yenes")},
    "en": {"ARS": Currency("peso", "pesos", cent="centavo", cents="centavos"),
           "USD": Currency("dollar", "dollars", cent="cent", cents="cents"),
           "EUR": Currency("euro", "euros", cent="cent", cents="cents"),
           "GBP": Currency("pound", "pounds", cent="penny", cents="pence"),
           "BRL": Currency("real", "reais", cent="centavo", cents="centavos"),
           "JPY": Currency("yen", "yen")},
}
# Written signs and codes -> currency; "$" is the locale's own.
SIGNS = {"US$": "USD", "U$S": "USD", "u$s": "USD", "U$s": "USD", "USD": "USD", "AR$": "ARS", "ARS": "ARS",
         "€": "EUR", "EUR": "EUR", "£": "GBP", "GBP": "GBP", "R$": "BRL", "BRL": "BRL", "¥": "JPY", "JPY": "JPY"}
LOCAL_DOLLAR = {"es": "ARS", "en": "USD"}
# Scale words after an amount ("US$ 3,5 millones", "$1.2bn"): written -> said.
SCALES = {"es": {"mil millones": "mil millones", "millones": "millones", "millón": "millón",
                 "billones": "billones", "billón": "billón", "mil": "mil"},
          "en": {"trillion": "trillion", "billion": "billion", "million": "million", "thousand": "thousand",
                 "tn": "trillion", "bn": "billion", "m": "million", "k": "thousand"}}
_AND = {"es": "con", "en": "and"}

_SIGN_ALT = "|".join(re.escape(s) for s in sorted([*SIGNS, "$"], key=len, reverse=True))


def _pattern(lang: str) -> str:
    scale = "|".join(sorted(SCALES[lang], key=len, reverse=True))
    space = r"[ \u00a0]?"
    before = (rf"(?<![\w$])(?P<sign>{_SIGN_ALT}){space}(?P<n>{NUMBER[lang]})(?![0-9])"
              rf"(?:{space if lang == 'en' else '[ ]'}(?P<scale>{scale})(?!\w))?")
    after = rf"(?<![\w.,])(?P<n2>{NUMBER[lang]}){space}(?P<sign2>USD|ARS|EUR|GBP|BRL|€|£)(?!\w)"
    if lang == "es":  # "$78.40", "US$1,234.50": wire copy in English notation inside a Spanish paragraph
        wire = rf"(?<![\w$])(?P<wsign>{_SIGN_ALT}){space}(?P<wn>{NUMBER['en']}\.[0-9]{{1,2}})(?![0-9])"
        return rf"{wire}|{before}|{after}"
    return rf"{before}|{after}"


def _amount_es(written: str, cur: Currency, scale: str | None) -> str:
    whole, fraction = parse(written, "es")
    if scale:
        gender = cur.gender if scale == "mil" else MASCULINE  # "doscientas mil libras", "un millón"
        words = number(written, "es", gender)
        return f"{words} {scale} {'de ' if scale != 'mil' else ''}{cur.many}"
    words = cardinal(whole, "es", cur.gender)
    if words.split()[-1] in ("millón", "millones", "billón", "billones"):
        words += " de"
    if fraction and len(fraction) > 2 or not cur.cents:
        if fraction.strip("0"):
            return f"{cardinal(whole, 'es')} {DECIMAL_WORD['es']} {fraction_words(fraction, 'es')} {cur.many}"
        return f"{words} {cur.one if is_one(written, 'es') else cur.many}"
    cents = int(fraction.ljust(2, "0")) if fraction else 0
    said_cents = f"{cardinal(cents, 'es', MASCULINE)} {cur.cent if cents == 1 else cur.cents}" if cents else ""
    if int(whole) == 0 and cents:
        return said_cents
    said = f"{words} {cur.one if int(whole) == 1 else cur.many}"
    return f"{said} {_AND['es']} {said_cents}" if said_cents else said


def _amount_en(written: str, cur: Currency, scale: str | None) -> str:
    whole, fraction = parse(written, "en")
    if scale:
        return f"{number(written, 'en')} {scale} {cur.many}"
    if fraction and len(fraction) > 2 or not cur.cents:
        if fraction.strip("0"):
            return f"{number(written, 'en')} {cur.many}"
        return f"{cardinal(whole, 'en')} {cur.one if is_one(written, 'en') else cur.many}"
    cents = int(fraction.ljust(2, "0")) if fraction else 0
    said_cents = f"{cardinal(cents, 'en')} {cur.cent if cents == 1 else cur.cents}" if cents else ""
    if int(whole) == 0 and cents:
        return said_cents
    said = f"{cardinal(whole, 'en')} {cur.one if int(whole) == 1 else cur.many}"
    return f"{said} {_AND['en']} {said_cents}" if said_cents else said


def _say_money(match: re.Match[str], lang: str) -> tuple[str, str]:
    groups = match.groupdict()
    if groups.get("wn"):  # English notation in Spanish copy: its "$" is the dollar, its point the cents'
        sign = str(groups["wsign"])
        whole, _, cents = str(groups["wn"]).replace(",", "").partition(".")
        code = "USD" if sign == "$" else SIGNS[sign]
        cur = CURRENCIES[lang][code]
        return _amount_es(f"{whole},{cents}", cur, None), f"{sign} = {cur.many}"
    sign = match.group("sign") or match.group("sign2")
    written = match.group("n") or match.group("n2")
    code = LOCAL_DOLLAR[lang] if sign == "$" else SIGNS[sign]
    cur = CURRENCIES[lang][code]
    scale = SCALES[lang][match.group("scale")] if match.group("scale") else None
    said = _amount_es(written, cur, scale) if lang == "es" else _amount_en(written, cur, scale)
    return said, f"{sign} = {cur.many}"


RULES = (Rule("money", per_lang(_pattern("es"), _pattern("en")), _say_money),)
