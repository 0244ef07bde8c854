"""A minimal SSML subset, read into what OmniStudio already speaks: script text and a lexicon.

A request's text that opens with ``<speak`` (after whitespace, or after an ``<?xml ...?>`` declaration)
is SSML (:func:`is_ssml`). :func:`read_ssml` parses it with defusedxml (a DTD or an entity declaration is
refused) and supports exactly:

- ``<speak>``, the root (in the SSML namespace or none); ``xml:lang="es-AR"`` / ``"en-US"`` sets the
  language when the request gives none (the request's ``language``, then its voice's ``:lang``, win).
- ``<break time="600ms"/>`` / ``time="1.5s"`` (to the millisecond), or ``strength=`` one of
  :data:`BREAK_STRENGTHS` (none 0, x-weak 0.1 s, weak 0.25 s, medium 0.5 s, strong 0.75 s, x-strong 1 s;
  ``<break/>`` alone is medium; ``time`` wins over ``strength``). A break becomes a script ``[pause N]``
  tag, so it is exactly what ``[pause]`` is (:mod:`omnistudio.script`): it ends the sentence before it
  and puts that much silence after it, with no breath in it. Breaks in a row add up.
- ``<say-as interpret-as="characters">`` (spelled letter by letter, digits as digit words:
  :func:`omnistudio.text.words.spell`), ``"cardinal"`` (a whole number, never a year: "1998" in English
  is "one thousand nine hundred ninety-eight"; the language's separators, a sign and decimals allowed:
  :func:`omnistudio.text.numbers.number`), ``"date"`` (the front-end's own date rule, so "14/10/2026" is
  read in Spanish as every other date is; text the rule does not read as a date is refused).
- ``<sub alias="...">written</sub>``: the alias is spoken (read alone by the front-end's rules, without
  the lexicon, so "Sr. Pérez" in an alias is "Señor Pérez"), the written text kept.

Anything else (``<prosody>``, ``<phoneme>``, ``<emphasis>``, ``<voice>``, ``<audio>``, ``<p>``, an
unknown element, an attribute these elements do not take) is one :class:`UserError` naming it, never
read aloud; so is XML that is not well-formed.

How it is represented. The text content (tags removed, whitespace collapsed into one line) is the
written text: shown, captioned, checked. The spoken form of a ``<say-as>`` or ``<sub>`` is an
ephemeral :class:`~omnistudio.text.Lexicon` of exact-phrase entries (case-sensitive, whole words), one
per written phrase, put over the server's lexicon for this request (:meth:`SsmlText.over`). The take
pipeline's ``plan()`` then runs the one text front-end as for every request: no second path, and the
spoken form is part of each sentence's seed and cache key as a lexicon entry's is. What that means,
stated: like any lexicon entry, a phrase is said its SSML way wherever it is written in this request
(``<sub alias="Organización Mundial de la Salud">OMS</sub>`` makes every "OMS" of the request the alias);
one written phrase given two spoken forms is refused; an element that does not stand as whole words in
the text around it (``<sub alias="x">Web</sub>site``) is refused, as the lexicon could not say it.
Why not a fixed span per element: the plan has no way to carry one (it normalises each sentence's
written text with the take's lexicon), and a lexicon is what the seed, the cache and the sidecars already
follow. The text content is script text, as any request's: OmniVoice's ``[laughter]`` passes through,
and a speaker tag may open it (it is one line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from omnistudio.checks import check_language
from omnistudio.errors import UserError
from omnistudio.script import MAX_PAUSE_S, PAUSE_RE, split_sentences
from omnistudio.text.frontend import normalize
from omnistudio.text.lexicon import Entry, Lexicon
from omnistudio.text.numbers import MINUS, NUMBER, PLUS, digits, number
from omnistudio.text.untrusted_xml import local_name, parse_untrusted
from omnistudio.text.words import spell

# SSML opens with <speak; a text that starts as any XML document (a declaration, a DOCTYPE, a comment) is
# read as SSML too, and so refused when it is not SSML this reads, never spoken as plain text.
SSML_RE = re.compile(r"^\ufeff?\s*(?:<\?xml|<!DOCTYPE|<!--|<speak(?=[\s/>]))", re.IGNORECASE)
SSML_NS = "http://www.w3.org/2001/10/synthesis"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
BREAK_STRENGTHS = {"none": 0.0, "x-weak": 0.1, "weak": 0.25, "medium": 0.5, "strong": 0.75, "x-strong": 1.0}
INTERPRETATIONS = ("characters", "cardinal", "date")
SUPPORTED = "use <break>, <say-as>, <sub>"
ATTRIBUTES = {"speak": {"version", XML_LANG, "{http://www.w3.org/2001/XMLSchema-instance}schemaLocation"},
              "break": {"time", "strength"}, "say-as": {"interpret-as"}, "sub": {"alias"}}
_TIME_RE = re.compile(r"^\s*(?P<value>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(?P<unit>ms|s)\s*$", re.IGNORECASE)
_DATES = {"es": "14/10/2026, 14 de octubre", "en": "10/14/2026, Oct. 14, 2026, 14 October"}


@dataclass(frozen=True)
class SsmlText:
    """An SSML request as OmniStudio speaks it: ``script`` (one line of script text: the SSML's text
    content with a ``[pause N]`` tag per break), its language, and its phrases' spoken forms."""

    script: str
    lang: str
    lexicon: Lexicon

    def over(self, lexicon: Lexicon) -> Lexicon:
        """``lexicon`` (the server's) with this request's phrases over it. The front-end applies the
        longest entry first, so a server entry at least as long as a phrase that shares a word with it
        could take the phrase's place: those are left out of this request; every other entry stays."""
        mine = [(set(_words(e.word)), len(e.word)) for e in self.lexicon.entries]
        kept = tuple(e for e in lexicon.entries
                     if not any(words & set(_words(e.word)) and len(e.word) >= size for words, size in mine))
        return Lexicon((*self.lexicon.entries, *kept))


def is_ssml(text: str) -> bool:
    """Whether a request's text is SSML: it opens with ``<speak`` (after whitespace or an XML declaration),
    or as any XML document (a declaration, a DOCTYPE, a comment first), which :func:`read_ssml` then reads
    or refuses (a DOCTYPE always: no entities)."""
    return SSML_RE.match(text) is not None


def read_ssml(text: str, lang: str | None = None) -> SsmlText:
    """The SSML document ``text`` as script text and phrases, in ``lang`` (the request's language, or
    None: the document's ``xml:lang``, else English); one :class:`UserError` for anything unsupported."""
    root = parse_untrusted(text, "SSML", "SSML", forbid_dtd=True)
    unsupported = list(dict.fromkeys(_shown(el) for el in root.iter() if _name(el) not in ATTRIBUTES))
    if unsupported:
        many = len(unsupported) > 1
        raise UserError(f"SSML element{'s' if many else ''} {', '.join(unsupported)} "
                        f"{'are' if many else 'is'} not supported: {SUPPORTED}")
    if _name(root) != "speak":
        raise UserError(f"SSML must have <speak> as its root, not {_shown(root)}")
    for el in root.iter():
        if el is not root and _name(el) == "speak":
            raise UserError("SSML <speak> is the root only: it cannot hold another <speak>")
        for attribute in el.attrib:
            if attribute not in ATTRIBUTES[_name(el)]:
                raise UserError(f"SSML <{_name(el)}> attribute '{local_name(attribute)}' is not supported")
    written_lang = _xml_lang(root.get(XML_LANG))
    lang = check_language(lang or written_lang or "en")
    reader = _Reader(lang)
    reader.text(root.text)
    for el in root:
        reader.element(el)
        reader.text(el.tail)
    return reader.result()


def _name(el: Any) -> str:
    """An element's name: its local name in SSML's namespace (or none), else ``{namespace}name``
    (never taken for an SSML element)."""
    tag: str = el.tag
    return local_name(tag) if tag.startswith(f"{{{SSML_NS}}}") or not tag.startswith("{") else tag


def _shown(el: Any) -> str:
    """An element as a message names it: ``<prosody>``, ``<effect> (namespace URI)``."""
    name = _name(el)
    return f"<{local_name(name)}> (namespace {name[1:].partition('}')[0]})" if name.startswith("{") else f"<{name}>"


def _words(text: str) -> list[str]:
    return [w.casefold() for w in re.findall(r"\w+", text)]


def _xml_lang(value: str | None) -> str | None:
    if value is None:
        return None
    primary = value.strip().replace("_", "-").split("-")[0].lower()
    if primary not in ("es", "en"):
        raise UserError(f"SSML xml:lang '{value.strip()}' is not a language OmniStudio speaks: use es (es-AR) "
                        "or en (en-US)")
    return primary


def break_seconds(el: Any) -> float:
    """The silence a ``<break>`` asks for, in seconds (to the millisecond)."""
    time, strength = el.get("time"), el.get("strength")
    if time is not None:
        match = _TIME_RE.match(time)
        if match is None:
            raise UserError(f'SSML <break time="{time}"/>: give a time like 600ms or 1.5s')
        seconds = float(match["value"]) / (1000.0 if match["unit"].lower() == "ms" else 1.0)
        if seconds > MAX_PAUSE_S:
            raise UserError(f'SSML <break time="{time}"/> is longer than the {MAX_PAUSE_S:g} s a pause may last')
        return round(seconds, 3)
    if strength is None:
        return BREAK_STRENGTHS["medium"]
    if strength.strip() not in BREAK_STRENGTHS:
        raise UserError(f'SSML <break strength="{strength}"/>: use one of {", ".join(BREAK_STRENGTHS)}')
    return BREAK_STRENGTHS[strength.strip()]


def say_as(interpret_as: str, written: str, lang: str) -> str:
    """What ``<say-as interpret-as=...>written</say-as>`` is spoken as in ``lang``."""
    tag = f'SSML <say-as interpret-as="{interpret_as}">'
    if interpret_as == "characters":
        said = " ".join(digits(c, lang) if c in "0123456789" else spell(c, lang) for c in written if c.isalnum())
        if not said.strip():
            raise UserError(f"{tag}: '{written}' has no letters or digits to spell")
        return said
    if interpret_as == "cardinal":
        match = re.fullmatch(rf"(?P<sign>[-−+]?)\s*(?P<n>{NUMBER[lang]})", written.strip())
        if match is None:
            example = "1.245 or 1245" if lang == "es" else "1,245 or 1245"
            raise UserError(f"{tag}: '{written}' is not a number as {lang} writes it ({example})")
        sign = {"-": MINUS[lang] + " ", "−": MINUS[lang] + " ", "+": PLUS[lang] + " "}.get(match["sign"], "")
        return sign + number(match["n"], lang)
    if interpret_as == "date":
        spoken = normalize(written, lang)
        if not any(span.rule == "date" for span in spoken.spans):
            raise UserError(f"{tag}: '{written}' is not a date the {lang} front-end reads (e.g. {_DATES[lang]})")
        return spoken.text
    if not interpret_as:
        raise UserError(f"SSML <say-as> needs interpret-as: {', '.join(INTERPRETATIONS)}")
    raise UserError(f'SSML <say-as interpret-as="{interpret_as}"> is not supported: use '
                    f'{", ".join(INTERPRETATIONS)}')


class _Reader:
    """Walks ``<speak>``'s children into one line of script text, with each phrase's place in it."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self.line = ""
        self.phrases: list[tuple[int, int, str, str, str]] = []  # start, end, element, written, spoken

    def text(self, text: str | None) -> None:
        collapsed = re.sub(r"\s+", " ", text or "")
        if self.line.endswith(" ") or not self.line:
            collapsed = collapsed.lstrip(" ")
        self.line += collapsed

    def element(self, el: Any) -> None:
        name = _name(el)
        inside = [_name(child) for child in el]
        if name == "break":
            if inside or (el.text or "").strip():
                raise UserError("SSML <break/> is empty: it holds no text or elements")
            seconds = break_seconds(el)
            if seconds and not self.line.strip():
                raise UserError("SSML <break> before any text: put it after the words it follows")
            if seconds:
                self.text(f" [pause {seconds:.3f}] ")
            return
        if inside:
            raise UserError(f"SSML <{name}> holds text only, not <{inside[0]}>")
        written = " ".join((el.text or "").split())
        if not written:
            raise UserError(f"SSML <{name}> is empty: put the written text inside it")
        if name == "sub":
            alias = " ".join((el.get("alias") or "").split())
            if not alias:
                raise UserError(f"SSML <sub> around '{written}' needs an alias (what is spoken)")
            spoken = normalize(alias, self.lang).text
            if not spoken.strip():
                raise UserError(f"SSML <sub> around '{written}': its alias says nothing")
        else:
            spoken = say_as((el.get("interpret-as") or "").strip(), written, self.lang)
        if len(split_sentences(written, self.lang)) > 1:
            raise UserError(f"SSML <{name}> holds more than one sentence ('{written}'): mark each on its own")
        if (el.text or "")[:1].isspace():
            self.text(" ")
        self.phrases.append((len(self.line), len(self.line) + len(written), name, written, spoken))
        self.line += written
        if (el.text or "")[-1:].isspace():
            self.text(" ")

    def result(self) -> SsmlText:
        line = self.line.rstrip(" ")
        if not PAUSE_RE.sub("", line).strip():
            raise UserError("SSML <speak> has no text to speak")
        entries: dict[str, Entry] = {}
        for _start, _end, name, written, spoken in self.phrases:
            if written in entries and entries[written].say != " ".join(spoken.split()):
                raise UserError(f"SSML gives '{written}' two spoken forms ('{entries[written].say}', '{spoken}'): "
                                "one written phrase is said one way in a request")
            if not re.search(r"\w", written):
                raise UserError(f"SSML <{name}> needs written text with a letter or digit, not '{written}'")
            try:
                entries[written] = Entry(written, spoken, case_sensitive=True)
            except UserError as exc:  # an entry's limits: what a phrase may say
                raise UserError(f"SSML <{name}>: {exc}") from None
        lexicon = Lexicon(tuple(entries.values()))
        said = normalize(line, self.lang, lexicon)
        claimed = {(s.written_start, s.written_end, s.detail) for s in said.spans if s.rule == "lexicon"}
        for start, end, name, written, _spoken in self.phrases:
            if (start, end, written) not in claimed:
                around = re.search(r"\w*$", line[:start])
                after = re.match(r"\w*", line[end:])
                context = (around.group() if around else "") + written + (after.group() if after else "")
                raise UserError(f"SSML <{name}>{written}</{name}> is not whole words in '{context}': "
                                "put a space or punctuation between it and the text next to it")
        return SsmlText(line, self.lang, lexicon)

