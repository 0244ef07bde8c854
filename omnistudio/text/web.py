"""Web addresses, e-mail addresses, @handles and #hashtags, said as a newsreader gives them.

"https://www.lanacion.com.ar/politica" is "lanacion punto com punto a erre barra politica" (the scheme
and "www" are not said; a final two-letter country code is spelled; a name Spanish or English cannot
pronounce is spelled: "bbc.co.uk" is "B B C dot co dot U K"). "prensa@afip.gob.ar" is "prensa arroba
afip punto gob punto a erre"; "@Kicillofok" is "arroba Kicillofok"; "#Elecciones2023" is "hashtag
Elecciones dos mil veintitrés"."""

from __future__ import annotations

import re

from omnistudio.text.numbers import cardinal, year
from omnistudio.text.rules import Rule, both
from omnistudio.text.words import acronym, pronounceable, spell

WORDS = {"es": {".": "punto", "/": "barra", "-": "guion", "_": "guion bajo", "@": "arroba", "#": "hashtag"},
         "en": {".": "dot", "/": "slash", "-": "dash", "_": "underscore", "@": "at", "#": "hashtag"}}
TLDS = ("com|org|net|gov|gob|edu|int|info|io|tv|ar|es|uk|us|mx|br|cl|uy|py|bo|pe|co|ve|ec|fr|de|it|eu|ch|"
        "ca|au|news|app")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?"
_HOST = rf"(?:{_LABEL}\.)+(?:{TLDS})(?![A-Za-z0-9\-])"
_URL = (rf"(?<![\w@.\-/])(?:(?P<scheme>https?://)(?:www\.)?(?P<h1>(?:{_LABEL}\.)*{_LABEL})|(?:www\.)?(?P<h2>{_HOST}))"
        r"(?P<path>/[\w\-/.%=?&~]*[\w\-/%=&~])?/?")
_EMAIL = rf"(?<![\w.+\-])(?P<local>[A-Za-z0-9][A-Za-z0-9._+\-]*)@(?P<host>{_HOST})"
_HANDLE = r"(?<![\w@.])@(?P<handle>[A-Za-z0-9_]{1,30})(?![\w@])"
_HASHTAG = r"(?<![\w#&])#(?P<tag>[^\W\d_][^\W_]*?)(?P<digits>[0-9]*)(?![\w])"
_PIECE_RE = re.compile(r"[A-Za-z]+|[0-9]+|[./\-_@]")


def _label(label: str, lang: str, last: bool) -> str:
    if last and len(label) == 2 or not pronounceable(label, lang) and label.isalpha() and len(label) <= 4:
        return spell(label, lang)
    return label.lower()


def _pieces(text: str, lang: str, host: bool = False) -> str:
    """Letters and digits of an address, its punctuation said ("punto", "barra", "guion")."""
    parts = _PIECE_RE.findall(text)
    letter_parts = [i for i, p in enumerate(parts) if p.isalnum()]
    said = []
    for i, part in enumerate(parts):
        if part in WORDS[lang]:
            said.append(WORDS[lang][part])
        elif part.isdigit():
            said.append(cardinal(part, lang) if len(part) <= 4 else " ".join(cardinal(d, lang) for d in part))
        elif host:
            said.append(_label(part, lang, last=i == letter_parts[-1]))
        else:
            said.append(acronym(part, lang)[0] if len(part) > 1 and part.isupper() else part)
    return " ".join(said)


def _say_url(match: re.Match[str], lang: str) -> str:
    host = match.group("h1") or match.group("h2")
    said = _pieces(host, lang, host=True)
    if match.group("path"):
        said += " " + _pieces(match.group("path"), lang)
    return said


def _say_email(match: re.Match[str], lang: str) -> str:
    return f"{_pieces(match.group('local'), lang)} {WORDS[lang]['@']} {_pieces(match.group('host'), lang, host=True)}"


def _say_handle(match: re.Match[str], lang: str) -> str:
    return f"{WORDS[lang]['@']} {_pieces(match.group('handle'), lang)}"


def _say_hashtag(match: re.Match[str], lang: str) -> str:
    digits = match.group("digits")
    said = f"{WORDS[lang]['#']} {match.group('tag')}"
    if digits:
        said += " " + (year(int(digits), lang) if len(digits) == 4 else cardinal(digits, lang))
    return said


RULES = (Rule("url", both(_EMAIL), _say_email),
         Rule("url", both(_URL), _say_url),
         Rule("url", both(_HANDLE), _say_handle),
         Rule("url", both(_HASHTAG), _say_hashtag))
