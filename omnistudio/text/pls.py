"""W3C Pronunciation Lexicon Specification (PLS) 1.0: a newsroom's dictionary in and out.

A PLS file holds one language (``xml:lang`` on ``<lexicon>``) and ``<lexeme>`` elements, each with one
or more ``<grapheme>`` (the written form) and its pronunciations: ``<alias>`` (a respelling) or
``<phoneme>`` (in the ``alphabet`` of the phoneme or of the lexicon)::

    <lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon"
             alphabet="x-cmu" xml:lang="en-US">
      <lexeme><grapheme>Sheinbaum</grapheme><phoneme>SH AY1 N B AW0 M</phoneme></lexeme>
      <lexeme><grapheme>ONU</grapheme><alias>o ene u</alias></lexeme>
    </lexicon>

Import: each grapheme becomes an :class:`~omnistudio.text.lexicon.Entry` of the file's language, said
as the lexeme's preferred (``prefer="true"``), else first, pronunciation that OmniStudio can speak:
an alias, or, in English, a phoneme in CMU/ARPAbet (``x-cmu``, ``x-arpabet``), which becomes
OmniVoice's bracket notation (``[SH AY1 N B AW0 M]``, ``phones``). A lexeme with none of those (IPA,
SAMPA, a Spanish phoneme) is skipped with one warning naming it. PLS has no case flag: an entry is
case-insensitive unless the file spells one word in two cases with different pronunciations ("US" and
"us"), or an OmniStudio export listed it in its ``<metadata>``, which keeps export then import exact.

The file is parsed with defusedxml: a document that declares entities (the "billion laughs", an
external entity reading a local file or a URL) is refused in one line before anything expands."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from omnistudio.checks import MAX_LEXICON_FILE_BYTES, read_small_file
from omnistudio.commit import atomic_write_bytes
from omnistudio.errors import UserError
from omnistudio.text.lexicon import PHONES_RE, Entry, Lexicon
from omnistudio.text.untrusted_xml import local_name, parse_untrusted

NS = "http://www.w3.org/2005/01/pronunciation-lexicon"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
OMNI_NS = "urn:omnistudio:lexicon"  # our <metadata>: the case-sensitive graphemes
CMU_ALPHABETS = frozenset({"x-cmu", "x-arpabet", "x-cmudict", "cmu", "arpabet", "cmudict"})
LOCALES = {"es": "es-AR", "en": "en-US"}  # xml:lang written on export (the roster's Spanish is Argentine)


@dataclass(frozen=True)
class Imported:
    """What a PLS file gave: its entries, its language, and one line per lexeme left out."""

    lexicon: Lexicon
    lang: str
    warnings: tuple[str, ...]


def read_pls(path: Path) -> Imported:
    """The entries of the PLS file at ``path`` (one-line :class:`UserError` when it is not one)."""

    return parse_pls(read_small_file(path, "the PLS file", MAX_LEXICON_FILE_BYTES), str(path))


def parse_pls(data: bytes, where: str) -> Imported:
    """The entries of PLS ``data``; ``where`` (the file) names it in errors."""
    root = parse_untrusted(data, where, "a pronunciation lexicon")
    ns = f"{{{NS}}}" if root.tag.startswith(f"{{{NS}}}") else ""
    if root.tag != f"{ns}lexicon":
        raise UserError(f"{where} is not a PLS lexicon: its root element is <{local_name(root.tag)}>, not <lexicon>")
    lang = _language(root.get(XML_LANG), where)
    alphabet = (root.get("alphabet") or "").strip()
    marked = {" ".join((el.text or "").split())
              for el in root.iter(f"{{{OMNI_NS}}}case-sensitive")}
    found: list[tuple[str, str, bool]] = []  # (word, say, phones) in file order
    warnings: list[str] = []
    for n, lexeme in enumerate(root.iter(f"{ns}lexeme"), start=1):
        graphemes = [" ".join((g.text or "").split()) for g in lexeme.iter(f"{ns}grapheme")]
        graphemes = [g for g in graphemes if g]
        name = f"lexeme {n}" + (f" ('{graphemes[0]}')" if graphemes else "")
        if not graphemes:
            warnings.append(f"{name}: skipped: it has no <grapheme>")
            continue
        said, why = _pronunciation(lexeme, ns, lang, alphabet)
        if said is None:
            warnings.append(f"{name}: skipped: {why}")
            continue
        found.extend((g, *said) for g in graphemes)
    entries: list[Entry] = []
    sensitive = marked | _case_variants(found)
    for word, say, phones in found:
        try:
            entries.append(Entry(word, say, lang, case_sensitive=word in sensitive, phones=phones))
        except UserError as exc:
            warnings.append(f"grapheme '{word}': skipped: {exc}")
    return Imported(Lexicon(tuple(entries)), lang, tuple(warnings))


def _language(value: str | None, where: str) -> str:
    if not value or not value.strip():
        raise UserError(f"{where}: <lexicon> has no xml:lang (give es-AR, es, en-US or en)")
    primary = value.strip().replace("_", "-").split("-")[0].lower()
    if primary not in LOCALES:
        raise UserError(f"{where} is a '{value.strip()}' lexicon: OmniStudio reads Spanish (es) and English (en)")
    return primary


def _pronunciation(lexeme: Any, ns: str, lang: str, alphabet: str) -> tuple[tuple[str, bool] | None, str]:
    """``((say, phones), "")`` for the lexeme's preferred usable pronunciation, else ``(None, why)``."""
    choices = [el for el in lexeme if el.tag in (f"{ns}alias", f"{ns}phoneme")]
    if not choices:
        return None, "it has no <alias> or <phoneme>"
    choices.sort(key=lambda el: (el.get("prefer") or "").strip().lower() != "true")  # stable: document order
    why = ""
    for el in choices:
        text = " ".join((el.text or "").split())
        if el.tag == f"{ns}alias":
            if text:
                return (text, False), ""
            continue
        used = (el.get("alphabet") or alphabet).strip()
        if lang != "en":
            why = why or f"phonemes are read for English only (this is a {lang} lexicon); give an <alias>"
        elif used.lower() not in CMU_ALPHABETS:
            why = why or (f"phonemes in alphabet '{used or '(none)'}' are not read: use an <alias>, or "
                          "CMU/ARPAbet phonemes (alphabet x-cmu)")
        else:
            phones = f"[{' '.join(text.strip('[]/ ').upper().split())}]"
            if PHONES_RE.match(phones):
                return (phones, True), ""
            why = why or f"'{text}' is not CMU/ARPAbet phones (like SH AY1 N B AW0 M)"
    return None, why or "its <alias> is empty"


def _case_variants(found: list[tuple[str, str, bool]]) -> set[str]:
    """The words spelled in two cases with different pronunciations: these stay case-sensitive."""
    spellings: dict[str, dict[str, tuple[str, bool]]] = {}
    for word, say, phones in found:
        spellings.setdefault(word.casefold(), {})[word] = (say, phones)
    return {word for variants in spellings.values() if len(set(variants.values())) > 1 for word in variants}


def entries_for(lexicon: Lexicon, lang: str) -> tuple[Entry, ...]:
    """``lexicon``'s entries for ``lang`` as a one-language file holds them: those for both languages
    given ``lang``, then the language's own (which win for the same word)."""
    both = [replace(e, lang=lang) for e in lexicon.entries if e.lang is None]
    return Lexicon((*both, *(e for e in lexicon.entries if e.lang == lang))).entries


def export_pls(lexicon: Lexicon, lang: str) -> bytes:
    """The PLS document of :func:`entries_for` ``lang``. One language a file: PLS has one ``xml:lang``."""
    entries = entries_for(lexicon, lang)
    if not entries:
        raise UserError(f"the lexicon has no entries for {lang}: nothing to export")
    alphabet = "x-cmu" if any(e.phones for e in entries) else "ipa"
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<lexicon version="1.0" xmlns="{NS}" alphabet="{alphabet}" xml:lang="{LOCALES[lang]}">']
    sensitive = [e.word for e in entries if e.case_sensitive]
    if sensitive:
        lines.append(f'  <metadata><case-sensitive-words xmlns="{OMNI_NS}">')
        lines.extend(f"    <case-sensitive>{escape(word)}</case-sensitive>" for word in sensitive)
        lines.append("  </case-sensitive-words></metadata>")
    for e in entries:
        said = (f"<phoneme>{escape(e.say[1:-1])}</phoneme>" if e.phones else f"<alias>{escape(e.say)}</alias>")
        lines.append(f"  <lexeme><grapheme>{escape(e.word)}</grapheme>{said}</lexeme>")
    lines.append("</lexicon>")
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_pls(path: Path, lexicon: Lexicon, lang: str) -> None:
    """Write ``lexicon``'s ``lang`` entries to ``path`` as PLS, atomically."""

    data = export_pls(lexicon, lang)
    atomic_write_bytes(path, lambda tmp: tmp.write_bytes(data), suffix=".pls")

