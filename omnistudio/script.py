"""The script model: lines with optional speaker tags, a language each, split into sentences.

Syntax (one paragraph per line; blank lines are ignored)::

    [ruby] Good evening. Here are the headlines.
    The speaker stays until the next tag.
    [valentina:es] Buenas noches, Sr. García.
    [:en] Back to the default voice, in English. [pause 1.5] After a silence.

A tag at the start of a line sets the speaker and the language for that line
and the lines after it (a line without a tag keeps both). ``[name]`` means the
script's default language (never the previous tag's), ``[name:xx]`` language
``xx``, ``[:xx]`` the default voice in language ``xx``. OmniVoice's own
inline non-verbal tags (``[laughter]``, ``[sigh]``, ...) are text, not speaker
tags. All tag syntax is parsed by :func:`parse_tag`.

A story (a news item: a chapter of a podcast file, a region of a Broadcast Wave) starts at a heading
line, ``# Weather`` (one to six ``#`` and a space), or at a ``[story Weather]`` tag at the start of a
line (the rest of the line is its first text); its sentences carry its name until the next one. A
heading is not spoken.

``[pause 0.6]`` (seconds; also ``[pause 600ms]``, ``[pause 0,6]``; ``[pause]`` alone is
:data:`DEFAULT_PAUSE_S`) anywhere in a line ends the sentence before it and puts exactly that much
silence after it (pauses in a row add up), instead of the pause the line layout would give.

Sentences are split with pysbd (rule-based, offline) and then repaired by
source offsets where it is known to fail in English and Spanish: fragments
that end in an abbreviation or an initial (``Sr.``, ``Dra.``, ``p.``,
``EE.``), fragments that continue in lower case (``m. del lunes``), and
fragments with no letters are glued back; a closing quote after a full stop
(``«No lo sé.» Luego``) is split.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import pysbd

from omnistudio.checks import LANGUAGES, check_alpha, check_language, check_pair
from omnistudio.errors import UserError

MAX_SCRIPT_BYTES = 64 * 1024  # about an hour of speech; bounds render memory (the whole take is stitched)
MAX_SENTENCE_CHARS = 400  # longer sentences are cut at a comma or space (the model prefers short inputs)

# OmniVoice's inline non-verbal tags (omnivoice.models.omnivoice._NONVERBAL_PATTERN): text, not speakers.
NONVERBAL_TAGS = frozenset({
    "laughter", "sigh", "confirmation-en", "question-en", "question-ah", "question-oh", "question-ei",
    "question-yi", "surprise-ah", "surprise-oh", "surprise-wa", "surprise-yo", "dissatisfaction-hnn",
})

TAG_RE = re.compile(r"^\s*\[([^\[\]\n]*)\]")
PAUSE_RE = re.compile(r"\[\s*pause\b([^\[\]\n]*)\]", re.IGNORECASE)
PAUSE_VALUE_RE = re.compile(r"^[\s:=]*(?P<value>\d+(?:[.,]\d+)?)?\s*(?P<unit>ms|s)?\s*$", re.IGNORECASE)
DEFAULT_PAUSE_S = 0.5
MAX_PAUSE_S = 10.0
STORY_RE = re.compile(r"^\s*(?:\[\s*story\b(?P<tag>[^\[\]\n]*)\]|#{1,6}[ \t]+(?P<head>\S.*))", re.IGNORECASE)
MAX_STORY_CHARS = 200
SPEAKER_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")

# Words that do not end a sentence when followed by a full stop (lower case, without the dot).
ABBREVIATIONS = {
    "en": {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "e.g", "i.e", "approx",
           "dept", "gen", "gov", "sen", "rep", "lt", "col", "sgt", "capt", "fig", "vol",
           "jan", "feb", "apr", "aug", "sept", "oct", "nov", "dec", "cf", "ca"},
    "es": {"sr", "sra", "srta", "sres", "dr", "dra", "dres", "ud", "uds", "vd", "vds", "d", "dña", "excmo",
           "excma", "ilmo", "ilma", "lic", "ing", "arq", "prof", "profa", "gral", "cnel", "tte", "cap",
           "pág", "págs", "núm", "nro", "n.º", "nº", "art", "av", "avda", "c", "aprox", "tel",
           "dpto", "depto", "admón", "cía", "ee",
           "vol", "fig", "ej", "p.ej", "pza", "sta", "sto", "fdo", "atte", "izq", "dcha"},
}
CONTINUATION_RE = re.compile(r"^[\s\"'«“‘(]*[a-zà-ÿº°ª%,;:)\]]")
QUOTE_SPLIT_RE = re.compile(r"(?<=[.!?…][»”\"’)])\s+(?=[¿¡«\"“(]?[A-ZÁÉÍÓÚÑÜ])")
INITIAL_RE = re.compile(r"(?:^|[\s(])[A-ZÁÉÍÓÚÑ]\.$")  # "J. Smith", "George W. Bush"
# Abbreviations that often end a sentence: only the next fragment's case decides ("p. m. del lunes").
AMBIGUOUS_END_RE = re.compile(r"(?:\b[ap]\.\s?m|\bEE\.\s?UU|\betc)\.$", re.IGNORECASE)


@dataclass(frozen=True)
class Blend:
    """A morph of two anchors: ``alpha`` of ``a`` with ``1 - alpha`` of ``b`` (alpha = 1 is exactly ``a``).

    Checked once, here (two different anchors, alpha in [0, 1], rounded to 0.01); the typed value
    travels from the slider or the ``[a+b@0.7]`` tag to the engine, never through a string."""

    a: str
    b: str
    alpha: float = 0.5

    def __post_init__(self) -> None:
        a, b = self.a.strip().lower(), self.b.strip().lower()
        check_pair(a, b)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "alpha", round(check_alpha(self.alpha), 2))

    def key(self) -> str:
        """Canonical text, e.g. ``ruby+storm@0.70`` (also the speaker name the script shows)."""
        return f"{self.a}+{self.b}@{self.alpha:.2f}"


@dataclass(frozen=True)
class Tag:
    """What a speaker tag says. ``speaker`` None: the default voice."""

    speaker: str | None
    lang: str | None
    blend: Blend | None = None  # set when the tag is a blend (``speaker`` is then ``blend.key()``)


@dataclass(frozen=True)
class Sentence:
    """One unit of synthesis."""

    id: int
    text: str
    speaker: str | None  # None: the voice given on the command line / in the UI
    lang: str
    line: int  # 1-based line in the script source
    blend: Blend | None = None  # the typed blend when ``speaker`` is one (``a+b@0.70``)
    pause_s: float | None = None  # the silence after it a ``[pause]`` asked for (None: the layout's)
    start: int = 0  # where it is written in the script text: [start, end) (spaces as typed)
    end: int = 0
    story: str | None = None  # the story it belongs to (``# Weather``, ``[story Weather]``); None: none

    @property
    def said(self) -> str:
        """What a stream of script sentences asks the model to say: the text as written (a take's
        planned sentence says its text front-end's spoken form)."""
        return self.text


@dataclass(frozen=True)
class Script:
    sentences: tuple[Sentence, ...]
    default_lang: str

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def voices(self) -> list[tuple[str | None, str]]:
        """Every (speaker, language) pair the script needs, in order of first use."""
        return list(dict.fromkeys((s.speaker, s.lang) for s in self.sentences))

    @classmethod
    def parse(cls, text: str, lang: str = "en", speakers: Collection[str] | None = None) -> Script:
        """Parse script text; ``speakers`` (when given) are the only speaker tags allowed."""
        return parse_script(text, lang, speakers)


# --------------------------------------------------------------------- tags
def parse_tag(body: str, line: int) -> Tag:
    """Parse the inside of ``[...]``: ``name``, ``name:lang``, ``:lang``, or a blend ``a+b@0.7[:lang]``.

    The one place tag syntax lives. A blend's speaker is kept as ``a+b@0.70``
    (alpha rounded to 0.01); :func:`blend_parts` splits it again.
    """
    raw = body.strip().lower()
    name, sep, code = raw.partition(":")
    name = name.strip()
    lang = check_line_language(code, line) if sep else None
    if not name:
        if lang is None:
            raise UserError(f"line {line}: empty speaker tag '[{body}]'")
        return Tag(None, lang)
    if "+" in name:
        blend = _blend(name, body, line)
        return Tag(blend.key(), lang, blend)
    if not SPEAKER_RE.match(name):
        raise UserError(f"line {line}: bad speaker tag '[{body}]': use [name], [name:lang] or [a+b@0.7]")
    return Tag(name, lang)


def _blend(name: str, body: str, line: int) -> Blend:
    pair, _at, alpha = name.partition("@")
    a, _plus, b = pair.partition("+")
    if not (SPEAKER_RE.match(a) and SPEAKER_RE.match(b)):
        raise UserError(f"line {line}: bad blend tag '[{body}]': use [a+b@0.7] with two anchor ids")
    try:
        check_pair(a, b)  # first, as Blend checks them: the same error wins when both are wrong
        return Blend(a, b, check_alpha(alpha) if alpha else 0.5)
    except UserError as exc:
        raise UserError(f"line {line}: {exc}") from None


def blend_parts(speaker: str | None) -> tuple[str, str, float] | None:
    """``("ruby", "storm", 0.7)`` for a blend speaker ``ruby+storm@0.70``; None for a plain one."""
    if not speaker or "+" not in speaker:
        return None
    pair, _at, alpha = speaker.partition("@")
    a, _plus, b = pair.partition("+")
    return a, b, float(alpha)


def speaker_anchors(speaker: str) -> list[str]:
    """The anchor ids a speaker tag uses (two for a blend)."""
    parts = blend_parts(speaker)
    return [parts[0], parts[1]] if parts else [speaker]


def check_line_language(code: str, line: int) -> str:
    try:
        return check_language(code)
    except UserError as exc:
        raise UserError(f"line {line}: {exc}") from None


def check_line(raw: str, tag: Tag | None, body: str, line: int) -> None:
    """A line that starts a tag it never closes, or that has nothing to speak, is one clear error
    (rather than the tag read aloud, or a second of noise for '...')."""
    if tag is None and raw.lstrip().startswith("[") and not TAG_RE.match(raw):
        raise UserError(f"line {line}: unclosed tag '{_short(raw.strip())}': close it with ']', "
                        "e.g. [ruby] Hello")
    if body and not re.search(r"\w", body):
        raise UserError(f"line {line}: nothing to speak in '{_short(body)}' (only punctuation or symbols): "
                        "add words or remove the line")


def _short(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def split_story(line_text: str, line: int) -> tuple[str | None, int]:
    """A story a line starts (a ``# heading`` or a leading ``[story NAME]``) and where its text starts
    (the line's end for a heading: it is not spoken); ``(None, 0)`` for any other line."""
    match = STORY_RE.match(line_text)
    if match is None:
        return None, 0
    name = " ".join((match["head"] if match["head"] is not None else match["tag"].lstrip(" :=")).split())
    if not name:
        raise UserError(f"line {line}: a story needs a name, e.g. [story Weather] or # Weather")
    if len(name) > MAX_STORY_CHARS:
        raise UserError(f"line {line}: a story's name is {len(name)} characters; the limit is {MAX_STORY_CHARS}")
    return name, (len(line_text) if match["head"] is not None else match.end())


def speaker_tag_match(line_text: str) -> re.Match[str] | None:
    """Where a line's leading speaker tag is written (None: no tag, or a non-verbal or pause tag)."""
    match = TAG_RE.match(line_text)
    if not match or match.group(1).strip().lower() in NONVERBAL_TAGS or PAUSE_RE.match(match.group(0).strip()):
        return None
    return match


def split_tag(line_text: str, line: int) -> tuple[Tag | None, str]:
    """A leading speaker tag of a line (if any) and the rest of the line."""
    match = speaker_tag_match(line_text)
    if match is None:
        return None, line_text.strip()
    return parse_tag(match.group(1), line), line_text[match.end():].strip()


def with_preset(tag: Tag, presets: Mapping[str, Blend] | None) -> Tag:
    """``tag`` with a preset's name (``[morning]``) read as that named duo's blend; any other tag as it is."""
    preset = presets.get(tag.speaker or "") if presets and tag.blend is None else None
    return tag if preset is None else Tag(preset.key(), tag.lang, preset)


# ---------------------------------------------------------------- sentences
class _Span(Protocol):
    """A sentence of pysbd's ``char_span`` output: its source offsets."""

    start: int
    end: int


class _Segmenter(Protocol):
    def segment(self, text: str) -> list[_Span]: ...


@lru_cache(maxsize=4)
def _segmenter(lang: str) -> _Segmenter:
    segmenter: _Segmenter = pysbd.Segmenter(language=lang, clean=False, char_span=True)
    return segmenter


def _ends_in_abbreviation(fragment: str, lang: str) -> bool:
    stripped = fragment.rstrip()
    if not stripped.endswith("."):
        return False
    if AMBIGUOUS_END_RE.search(stripped):
        return False
    if INITIAL_RE.search(stripped):
        return True
    word = stripped.rsplit(None, 1)[-1].lstrip("(\"'«“¿¡").lower()
    return word[:-1] in ABBREVIATIONS.get(lang, set())


def _pysbd_spans(text: str, lang: str) -> list[tuple[int, int]]:
    spans = []
    for seg in _segmenter(lang).segment(text):
        start, end = seg.start, seg.end
        if end > start:
            spans.append((start, end))
    if not spans:
        return [(0, len(text))]
    # pysbd's spans can leave gaps (whitespace) or overlap by a character: make them tile the text
    tiled, pos = [], 0
    for i, (_, end) in enumerate(spans):
        end = len(text) if i == len(spans) - 1 else max(end, pos)
        tiled.append((pos, end))
        pos = end
    return [(s, e) for s, e in tiled if e > s]


def _glue(text: str, spans: list[tuple[int, int]], lang: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in spans:
        piece = text[start:end]
        if out:
            prev = text[out[-1][0]:out[-1][1]]
            if (_ends_in_abbreviation(prev, lang) or CONTINUATION_RE.match(piece)
                    or not re.search(r"\w", piece) or not re.search(r"[^\W\d_]", prev)):
                out[-1] = (out[-1][0], end)
                continue
        out.append((start, end))
    return out


def cut_long(sentence: str) -> list[str]:
    """``sentence`` in parts of at most MAX_SENTENCE_CHARS, cut after a comma, semicolon or colon where one
    lies past the first third, else at a space (one part when it is short enough)."""
    parts = []
    while len(sentence) > MAX_SENTENCE_CHARS:
        window = sentence[:MAX_SENTENCE_CHARS]
        cut = max(window.rfind(", "), window.rfind("; "), window.rfind(": "))
        cut = cut + 1 if cut > MAX_SENTENCE_CHARS // 3 else window.rfind(" ")
        if cut <= 0:
            cut = MAX_SENTENCE_CHARS
        parts.append(sentence[:cut].strip())
        sentence = sentence[cut:].strip()
    return [*parts, sentence] if sentence else parts


def split_sentences(text: str, lang: str = "en") -> list[str]:
    """Split one paragraph into sentences (English or Spanish)."""
    lang = check_language(lang)
    text = " ".join(text.split())
    if not text:
        return []
    spans = _glue(text, _pysbd_spans(text, lang), lang)
    sentences = []
    for start, end in spans:
        for part in QUOTE_SPLIT_RE.split(text[start:end].strip()):
            sentences.extend(cut_long(part.strip()) if part.strip() else [])
    return sentences


# ------------------------------------------------------------------ pauses
def parse_pause(body: str, line: int) -> float:
    """The seconds of a pause tag's inside after ``pause`` (``" 0.6"``, ``" 600ms"``, ``""``)."""
    match = PAUSE_VALUE_RE.match(body)
    if match is None:
        raise UserError(f"line {line}: bad pause '[pause{body}]': use [pause 0.6] (seconds) or [pause 600ms]")
    if match["value"] is None:
        if match["unit"]:
            raise UserError(f"line {line}: bad pause '[pause{body}]': give a length, e.g. [pause 0.6]")
        return DEFAULT_PAUSE_S
    seconds = float(match["value"].replace(",", ".")) / (1000.0 if (match["unit"] or "").lower() == "ms" else 1.0)
    if not 0.0 < seconds <= MAX_PAUSE_S:
        raise UserError(f"line {line}: pause {seconds:g} s is out of range: more than 0, at most {MAX_PAUSE_S:g} s")
    return seconds


def split_pauses(body: str, line: int) -> list[tuple[str, float | None]]:
    """A line's text cut at its pause tags: ``(text, seconds of the pause after it or None)``."""
    pieces: list[tuple[str, float | None]] = []
    pos = 0
    for match in PAUSE_RE.finditer(body):
        pieces.append((body[pos:match.start()], parse_pause(match.group(1), line)))
        pos = match.end()
    pieces.append((body[pos:], None))
    return pieces


# ------------------------------------------------------------------ scripts
def parse_script(text: str, lang: str = "en", speakers: Collection[str] | None = None,
                 presets: Mapping[str, Blend] | None = None) -> Script:
    """``presets``: named duos (a project's), each a speaker tag of its own: ``[morning]`` is its blend."""
    reader = LineReader(check_language(lang), speakers, presets)
    if not text.strip():
        raise UserError("the script is empty")
    at = 0
    for number, raw in enumerate(text.splitlines(keepends=True), start=1):
        reader.line(raw, number, at)
        at += len(raw)
    return reader.script()


class LineReader:
    """A script read a line at a time (what a tag, a story or a language sets carries to the next lines):
    :func:`parse_script` for a whole text, and text as it is written (:mod:`omnistudio.take.feed`).
    ``copy.copy`` of a reader reads a line tentatively (the sentences it would give) and leaves this one."""

    def __init__(self, lang: str, speakers: Collection[str] | None = None,
                 presets: Mapping[str, Blend] | None = None) -> None:
        self.default_lang = self.current = lang
        self.known = {s.lower() for s in speakers} if speakers is not None else None
        self.presets = presets
        self.speaker: str | None = None
        self.blend: Blend | None = None
        self.story: str | None = None
        self.sentences: list[Sentence] = []

    def line(self, raw: str, number: int, at: int) -> list[Sentence]:
        """Read line ``number`` (its text as written, its line ending included or not), which starts at
        character ``at`` of the script; returns its sentences (also kept in ``sentences``)."""
        first = len(self.sentences)
        raw = raw.splitlines()[0] if raw.strip("\r\n") else ""  # without its line ending (any splitlines knows)
        named, skip = split_story(raw, number)
        if named is not None:
            self.story, raw, at = named, raw[skip:], at + skip
        tag, body = split_tag(raw, number)
        tag = with_preset(tag, self.presets) if tag is not None else None
        check_line(raw, tag, PAUSE_RE.sub(" ", body).strip(), number)
        if tag is not None:
            unknown = [a for a in speaker_anchors(tag.speaker) if a not in self.known] if (
                tag.speaker is not None and self.known is not None) else []
            if unknown:
                known = sorted(self.known or ())
                hint = f" (known: {', '.join(known[:8])}{', ...' if len(known) > 8 else ''})" if known else ""
                raise UserError(f"line {number}: unknown speaker '{unknown[0]}'{hint}")
            self.speaker, self.blend = tag.speaker, tag.blend
            self.current = tag.lang or self.default_lang  # a tag without a language: the script's default
        cursor = 0  # where the last sentence ended, in ``raw``
        for piece, pause in split_pauses(body, number):
            for sentence in split_sentences(piece, self.current):
                start, end = _locate(raw, sentence, cursor)
                cursor = end
                self.sentences.append(Sentence(len(self.sentences), sentence, self.speaker, self.current, number,
                                               self.blend, start=at + start, end=at + end, story=self.story))
            if pause is not None:
                if not self.sentences:
                    raise UserError(f"line {number}: a pause before the first sentence: put [pause] after some text")
                last = self.sentences[-1]
                self.sentences[-1] = replace(last, pause_s=(last.pause_s or 0.0) + pause)
        return self.sentences[first:]

    def script(self) -> Script:
        if not self.sentences:
            raise UserError("the script has only speaker tags and no text to speak")
        return Script(tuple(self.sentences), self.default_lang)


def _locate(text: str, sentence: str, begin: int) -> tuple[int, int]:
    """Where ``sentence`` (whitespace collapsed, as the splitter gives it) is written in ``text`` from
    ``begin``, spaces as typed (two spaces, a tab); (begin, begin) where it is not."""
    words = sentence.split()
    match = re.compile(r"\s+".join(map(re.escape, words))).search(text, begin) if words else None
    return (match.start(), match.end()) if match else (begin, begin)


def check_script_size(text: str, where: str = "the script", max_bytes: int = MAX_SCRIPT_BYTES) -> str:
    """Refuse a script over ``max_bytes`` of UTF-8 (every client's limit: a file, MCP, the studio)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise _too_big(size, where, max_bytes)
    return text


def _too_big(size: int, where: str, max_bytes: int) -> UserError:
    return UserError(f"{where} is {size:,} bytes; the limit is {max_bytes:,} ({max_bytes / 1024:g} KB, "
                     "about an hour of speech): split it into parts")


def read_script(path: Path, max_bytes: int = MAX_SCRIPT_BYTES) -> str:
    """Read a script file as UTF-8 text, or fail with one line saying what is wrong."""
    if not path.exists():
        raise UserError(f"script {path} does not exist")
    if not path.is_file():
        raise UserError(f"script {path} is not a file")
    size = path.stat().st_size
    if size > max_bytes:
        raise _too_big(size, f"script {path}", max_bytes)
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise UserError(f"script {path} looks like a binary file, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise UserError(f"script {path} is not UTF-8 text (bad byte 0x{data[exc.start]:02x} on line {line})") from None
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\n\r\t")
    if controls:
        raise UserError(f"script {path} contains {controls} control characters; is it a text file?")
    return text


__all__ = ["Blend", "DEFAULT_PAUSE_S", "LANGUAGES", "MAX_SCRIPT_BYTES", "Script", "Sentence", "Tag", "blend_parts",
           "check_script_size", "cut_long",
           "parse_pause", "parse_script", "parse_tag", "read_script", "speaker_tag_match", "split_sentences", "split_story",
           "split_tag", "with_preset"]
