"""A small syllable counter for spoken Spanish and English words: the weight an estimated word gets.

Vowel groups, with Spanish's diphthong rule (two strong vowels, a e o or an accented i u, are two
syllables: "po-e-sí-a"; a weak vowel, unaccented i u ü, joins its neighbour: "cie-lo", "cui-da") and
English's silent e ("time", "hopes", "named"; not "table", "wanted", "horses"). A token with no vowel
(a spelled letter: "b", "s") is one syllable. It is an estimate: words spread by it are marked so."""

from __future__ import annotations

import re
import unicodedata

_TOKEN_RE = re.compile(r"[^\W\d_]+|\d+")
_ES_STRONG = frozenset("aeoáéóíú")
_ES_VOWELS = frozenset("aeiouáéíóúü")
_EN_VOWELS = frozenset("aeiouy")


def syllables(text: str, lang: str) -> int:
    """The syllables of ``text`` (spoken words, any case, punctuation ignored) in ``lang`` (es|en)."""
    count = _es_token if lang == "es" else _en_token
    return sum(count(token) for token in _TOKEN_RE.findall(text.lower()))


def _es_token(word: str) -> int:
    if word.isdigit():
        return len(word)  # digits left by the front-end: about one syllable each
    groups = 0
    previous = ""  # the last vowel of the current group, "" outside a group
    for i, ch in enumerate(word):
        # y is a vowel alone ("y") and at the end after a vowel ("hoy", "muy"); elsewhere a consonant ("ayer")
        vowel = ch in _ES_VOWELS or (ch == "y" and i + 1 == len(word) and (i == 0 or word[i - 1] in _ES_VOWELS))
        if not vowel:
            previous = ""
            continue
        if not previous or (previous in _ES_STRONG and ch in _ES_STRONG):
            groups += 1  # a new group, or a hiatus inside one
        previous = ch
    return max(groups, 1)


def _en_token(word: str) -> int:
    word = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
    if word.isdigit():
        return len(word)
    groups = 0
    inside = False
    for i, ch in enumerate(word):
        vowel = ch in _EN_VOWELS and not (ch == "y" and i == 0 and len(word) > 1)  # "yes": y is a consonant
        groups += vowel and not inside
        inside = vowel
    if groups > 1 and _silent_ending(word):
        groups -= 1
    return max(groups, 1)


def _silent_ending(word: str) -> bool:
    """A final e that makes no syllable: "time", "hopes", "named" (not "table", "horses", "wanted", "free")."""
    if word.endswith("e"):
        return not (word.endswith(("ee", "ye")) or (word.endswith("le") and len(word) > 2
                                                     and word[-3] not in _EN_VOWELS))
    if word.endswith("es"):
        return not word.endswith(("ses", "xes", "zes", "ches", "shes", "ges", "ces", "ees"))
    if word.endswith("ed"):
        return not word.endswith(("ted", "ded", "eed"))
    return False
