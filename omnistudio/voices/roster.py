"""The anchor roster: who the anchors are, how each sounds in es/en, and the canonical duos.

The shipped roster is ``omnistudio/data/anchors.toml`` (package data, the one copy);
``OMNISTUDIO_ROSTER`` (a file) replaces it.
Anchors added with ``omnistudio voices add`` go to a user roster,
``<data>/voices/anchors.toml``, that is merged with the shipped one.

Voice-design attributes are checked against OmniVoice's own instruct items
(``omnivoice.utils.voice_design``), one per category, so a roster that loads is
a roster OmniVoice's ``_resolve_instruct`` accepts (a test checks every shipped
instruct with it; reading a roster never imports torch).
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import sys
import tempfile
import tomllib
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, overload

from omnistudio.config import locations
from omnistudio.errors import UserError
from omnistudio.locks import exclusive

ROSTER_ENV = "OMNISTUDIO_ROSTER"
LANGS = ("es", "en")
FORMAT = 1
ID_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
DEFAULT_DESIGN = {"num_step": 32, "guidance": 2.0}
ANCHOR_KEYS = {"id", "name", "gender", "age", "pitch", "style", "accent", "seed", *LANGS}
VOICE_KEYS = {"recording", "transcript", "matched", "consent"}


@lru_cache(maxsize=1)
def _voice_design_module() -> ModuleType:
    """``omnivoice.utils.voice_design`` read on its own: importing it through the package would run
    ``omnivoice/__init__``, which loads torch and transformers (seconds) for a table of strings."""

    if "omnivoice.utils.voice_design" in sys.modules:
        return sys.modules["omnivoice.utils.voice_design"]
    package = importlib.util.find_spec("omnivoice")
    if package is None or package.origin is None:
        raise UserError("the omnivoice package is not installed")
    path = Path(package.origin).parent / "utils" / "voice_design.py"
    spec = importlib.util.spec_from_file_location("omnistudio._omnivoice_voice_design", path)
    if spec is None or spec.loader is None:  # never for a .py path
        raise UserError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def attribute_choices() -> dict[str, list[str]]:
    """The English instruct items OmniVoice accepts, by attribute (accents are English-only)."""
    _INSTRUCT_CATEGORIES = _voice_design_module()._INSTRUCT_CATEGORIES
    gender, age, pitch, style, accent = (sorted(c) for c in _INSTRUCT_CATEGORIES[:5])
    return {"gender": gender, "age": age, "pitch": pitch, "style": style, "accent": accent}


@dataclass(frozen=True)
class Voice:
    """How one anchor sounds in one language: a recording, a matched anchor, or voice design."""

    recording: Path | None = None
    transcript: str | None = None
    matched: str | None = None
    consent: str | None = None  # the speaker's consent statement, stored with a voice added over the API


@dataclass(frozen=True)
class Anchor:
    id: str
    name: str
    gender: str
    age: str
    pitch: str
    seed: int
    style: str | None = None
    accent: str | None = None
    voices: dict[str, Voice] = field(default_factory=dict)
    origin: Path | None = None  # the roster file that defines it

    def voice(self, lang: str) -> Voice:
        return self.voices.get(lang, Voice())

    def instruct(self, lang: str) -> str:
        """The voice-design instruct for ``lang`` (accents only apply to English)."""
        items = [self.gender, self.age, self.pitch]
        if self.style:
            items.append(self.style)
        if self.accent and lang == "en":
            items.append(self.accent)
        return ", ".join(items)

    def as_dict(self) -> dict[str, object]:
        voices = {lang: {k: (str(v) if isinstance(v, Path) else v)
                         for k, v in vars(self.voice(lang)).items() if v is not None} for lang in LANGS}
        return {"id": self.id, "name": self.name, "gender": self.gender, "age": self.age,
                "pitch": self.pitch, "style": self.style, "accent": self.accent, "seed": self.seed,
                "voices": voices}


@dataclass(frozen=True)
class Duo:
    anchors: tuple[str, str]
    langs: tuple[str, ...]
    ratio: float


@dataclass(frozen=True)
class Roster:
    anchors: dict[str, Anchor]
    duos: tuple[Duo, ...]
    calibration: dict[str, str]
    design: dict[str, float]
    sources: tuple[Path, ...]

    def get(self, anchor_id: str) -> Anchor:
        key = (anchor_id or "").strip().lower()
        if key in self.anchors:
            return self.anchors[key]
        close = difflib.get_close_matches(key, list(self.anchors), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else " (see `omnistudio voices list`)"
        raise UserError(f"unknown anchor '{anchor_id}'{hint}")

    def source_of(self, anchor_id: str, lang: str) -> tuple[Anchor, Voice]:
        """The anchor whose voice ``anchor_id`` speaks with in ``lang`` (follows "matched")."""
        anchor = self.get(anchor_id)
        voice = anchor.voice(lang)
        if voice.matched:
            target = self.anchors[voice.matched]
            return target, target.voice(lang)
        return anchor, voice

    def pairs(self, anchors: list[str] | None = None, langs: list[str] | None = None) -> list[tuple[str, str]]:
        ids = [self.get(a).id for a in anchors] if anchors else list(self.anchors)
        return [(a, lang) for a in ids for lang in (langs or LANGS)]


def shipped_roster_path() -> Path:
    """``OMNISTUDIO_ROSTER``, else the shipped ``omnistudio/data/anchors.toml``."""
    override = os.environ.get(ROSTER_ENV)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise UserError(f"{ROSTER_ENV}={override} is not a file")
        return path
    shipped = Path(__file__).resolve().parents[1] / "data" / "anchors.toml"
    if not shipped.is_file():
        raise UserError(f"no anchor roster found at {shipped}: reinstall omnistudio or set {ROSTER_ENV} to a roster file")
    return shipped


def user_roster_path() -> Path:
    return locations().data / "voices" / "anchors.toml"


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"roster {path} is not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"roster {path} cannot be read: {exc}") from None


@overload
def _choice(where: str, attr: str, value: object, choices: list[str], optional: Literal[False] = False) -> str: ...


@overload
def _choice(where: str, attr: str, value: object, choices: list[str], optional: bool) -> str | None: ...


def _choice(where: str, attr: str, value: object, choices: list[str], optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text not in choices:
        close = difflib.get_close_matches(str(value), choices, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise UserError(f"{where}: {attr} {value!r} is not one OmniVoice accepts ({hint}use one of: "
                        f"{', '.join(choices)})")
    return text


def _text(where: str, key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{where}: '{key}' must be a non-empty string")
    return " ".join(value.split())


def _voice(where: str, raw: object, base: Path) -> Voice:
    if not isinstance(raw, dict):
        raise UserError(f"{where}: must be a table with recording/transcript or matched")
    unknown = set(raw) - VOICE_KEYS
    if unknown:
        raise UserError(f"{where}: unknown key '{sorted(unknown)[0]}' (use {', '.join(sorted(VOICE_KEYS))})")
    if "matched" in raw:
        if "recording" in raw:
            raise UserError(f"{where}: give either a recording or a matched anchor, not both")
        return Voice(matched=_text(where, "matched", raw["matched"]).lower())
    if "recording" in raw:
        if "transcript" not in raw:
            raise UserError(f"{where}: the recording needs its exact transcript ('transcript')")
        path = Path(_text(where, "recording", raw["recording"])).expanduser()
        consent = _text(where, "consent", raw["consent"]) if "consent" in raw else None
        return Voice(recording=path if path.is_absolute() else (base / path),
                     transcript=_text(where, "transcript", raw["transcript"]), consent=consent)
    if "transcript" in raw or "consent" in raw:
        raise UserError(f"{where}: a {'transcript' if 'transcript' in raw else 'consent'} without a recording")
    return Voice()


def parse_anchor(raw: object, origin: Path, index: int) -> Anchor:
    """One ``[[anchor]]`` table, checked field by field."""
    where = f"roster {origin}: anchor #{index + 1}"
    if not isinstance(raw, dict):
        raise UserError(f"{where} is not a table")
    anchor_id = raw.get("id")
    if not isinstance(anchor_id, str) or not ID_RE.match(anchor_id):
        raise UserError(f"{where}: id {anchor_id!r} must be lowercase letters, digits or _ "
                        "(starting with a letter, at most 40)")
    where = f"roster {origin}: anchor '{anchor_id}'"
    unknown = set(raw) - ANCHOR_KEYS
    if unknown:
        raise UserError(f"{where}: unknown key '{sorted(unknown)[0]}' (use {', '.join(sorted(ANCHOR_KEYS))})")
    choices = attribute_choices()
    seed = raw.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
        raise UserError(f"{where}: seed must be a whole number 0..2^63-1, got {seed!r}")
    anchor = Anchor(
        id=anchor_id, name=_text(where, "name", raw.get("name")), seed=seed, origin=origin,
        gender=_choice(where, "gender", raw.get("gender"), choices["gender"]),
        age=_choice(where, "age", raw.get("age"), choices["age"]),
        pitch=_choice(where, "pitch", raw.get("pitch"), choices["pitch"]),
        style=_choice(where, "style", raw.get("style"), choices["style"], optional=True),
        accent=_choice(where, "accent", raw.get("accent"), choices["accent"], optional=True),
        voices={lang: _voice(f"{where} ({lang})", raw[lang], origin.parent) for lang in LANGS if lang in raw},
    )
    # Each attribute is one of OmniVoice's own instruct items (attribute_choices), one per category,
    # so OmniVoice's _resolve_instruct accepts the result; importing it here would pull in torch
    # (seconds) just to read a roster. tests/test_roster.py checks every shipped instruct with it.
    return anchor


def _parse_duo(raw: object, origin: Path, index: int, anchors: dict[str, Anchor]) -> Duo:
    where = f"roster {origin}: duo #{index + 1}"
    pair = raw.get("anchors") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(pair, list) or len(pair) != 2 or pair[0] == pair[1]:
        raise UserError(f"{where}: 'anchors' must list two different anchor ids")
    for a in pair:
        if a not in anchors:
            raise UserError(f"{where}: unknown anchor {a!r}")
    langs = raw.get("langs", list(LANGS))
    if not isinstance(langs, list) or not langs or any(lang not in LANGS for lang in langs):
        raise UserError(f"{where}: 'langs' must list languages from {', '.join(LANGS)}")
    ratio = raw.get("ratio", 0.5)
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0.0 <= ratio <= 1.0:
        raise UserError(f"{where}: ratio must be a number from 0 to 1, got {ratio!r}")
    return Duo((pair[0], pair[1]), tuple(langs), float(ratio))


def _check_matches(anchors: dict[str, Anchor]) -> None:
    for anchor in anchors.values():
        for lang, voice in anchor.voices.items():
            if not voice.matched:
                continue
            where = f"roster {anchor.origin}: anchor '{anchor.id}' ({lang})"
            target = anchors.get(voice.matched)
            if target is None:
                raise UserError(f"{where}: matched anchor '{voice.matched}' is not in the roster")
            if target.id == anchor.id:
                raise UserError(f"{where}: an anchor cannot be matched to itself")
            if target.voice(lang).matched:
                raise UserError(f"{where}: matched anchor '{target.id}' is itself matched in {lang}; "
                                "match to an anchor with its own voice")


def _check_design(origin: Path, design: Mapping[str, object]) -> dict[str, float]:
    # lazy: looked up when called (tests replace it)
    from omnistudio.checks import check_num_step

    unknown = set(design) - set(DEFAULT_DESIGN)
    if unknown:
        raise UserError(f"roster {origin}: [design] has unknown key '{sorted(unknown)[0]}'")
    guidance = design["guidance"]
    if not isinstance(guidance, (int, float)) or isinstance(guidance, bool) or not 0 <= guidance <= 20:
        raise UserError(f"roster {origin}: [design] guidance must be a number from 0 to 20, got {guidance!r}")
    try:
        num_step = check_num_step(design["num_step"])
    except UserError as exc:
        raise UserError(f"roster {origin}: [design] {exc}") from None
    return {"num_step": num_step, "guidance": float(guidance)}


def load_roster(path: Path | None = None) -> Roster:
    """The shipped roster (or ``path``) merged with the user roster of ``voices add``."""
    if path is not None:
        return load_files([Path(path)])
    user = user_roster_path()
    return load_files([shipped_roster_path(), *([user] if user.is_file() else [])])


def load_files(files: list[Path]) -> Roster:
    """Read, check and merge roster files (the first one sets [design])."""
    main = files[0]
    anchors: dict[str, Anchor] = {}
    duos_raw: list[tuple[object, Path, int]] = []
    calibration: dict[str, str] = {}
    merged: dict[str, object] = dict(DEFAULT_DESIGN)  # checked once every file is read
    for file in files:
        if not file.is_file():
            raise UserError(f"roster {file} does not exist")
        data = read_toml(file)
        if data.get("format", FORMAT) != FORMAT:
            raise UserError(f"roster {file} has format {data.get('format')!r}; this version reads {FORMAT}")
        raw_anchors = data.get("anchor", [])
        if not isinstance(raw_anchors, list):
            raise UserError(f"roster {file}: 'anchor' must be an array of tables ([[anchor]])")
        for i, raw in enumerate(raw_anchors):
            anchor = parse_anchor(raw, file, i)
            if anchor.id in anchors:
                raise UserError(f"roster {file}: duplicate anchor id '{anchor.id}' "
                                f"(already defined in {anchors[anchor.id].origin})")
            anchors[anchor.id] = anchor
        duos_raw += [(raw, file, i) for i, raw in enumerate(data.get("duo", []))]
        for lang, text in data.get("calibration", {}).items():
            if lang not in LANGS:
                raise UserError(f"roster {file}: calibration language '{lang}' is not one of {', '.join(LANGS)}")
            calibration.setdefault(lang, _text(f"roster {file}: calibration", lang, text))
        if file == main:
            merged.update(data.get("design", {}))
    design = _check_design(main, merged)
    missing = [lang for lang in LANGS if lang not in calibration]
    if missing:
        raise UserError(f"roster {main}: [calibration] needs a sentence for {', '.join(missing)}")
    _check_matches(anchors)
    duos = tuple(_parse_duo(raw, f, i, anchors) for raw, f, i in duos_raw)
    return Roster(anchors, duos, calibration, design, tuple(files))


# ------------------------------------------------------------------ user roster (voices add)
def _toml_value(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return str(value)


def dump_anchors(anchors: Sequence[Mapping[str, object]]) -> str:
    """A user roster file for ``anchors`` (plain dicts in roster form)."""
    out = ["# Anchors added with `omnistudio voices add` (merged with the shipped roster).", "",
           f"format = {FORMAT}", ""]
    for raw in anchors:
        out.append("[[anchor]]")
        out += [f"{k} = {_toml_value(v)}" for k, v in raw.items() if v is not None]
        out.append("")
    return "\n".join(out)


def slug(name: str) -> str:
    """An anchor id from a display name: 'Ana María Paz' -> 'ana_maria_paz'."""

    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    text = re.sub(r"[^a-z0-9]+", "_", ascii_name.lower()).strip("_")[:40]
    if not ID_RE.match(text):
        raise UserError(f"cannot make an anchor id from the name {name!r}: use letters and digits")
    return text


def recording_inputs(roster: Roster | None = None) -> dict[str, Path]:
    """Every anchor recording of the roster, described for an output-collision check
    (``check_not_input``): an output path must never overwrite one."""
    try:
        roster = roster or load_roster()
    except UserError:
        return {}
    return {f"anchor {a.id}'s {lang} recording": v.recording
            for a in roster.anchors.values() for lang, v in a.voices.items() if v.recording is not None}


def update_user_roster(change: Callable[[list[dict[str, object]]], None],
                       before_commit: Callable[[], None] | None = None,
                       after_commit: Callable[[], None] | None = None) -> Path:
    """Read-modify-write the user roster under an exclusive file lock, so two ``voices add`` at
    once both land: ``change`` edits the anchor tables (plain dicts) in place; the result is checked
    as a whole (with the shipped roster), then ``before_commit`` runs (e.g. copies a recording),
    then the new file replaces the old one atomically, then ``after_commit`` runs, still under the
    lock (e.g. removes files nothing refers to any more). Returns the user roster path."""

    user_file = user_roster_path()
    user_file.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(user_file.with_name(user_file.name + ".lock")):
        raws: list[dict[str, object]] = read_toml(user_file).get("anchor", []) if user_file.is_file() else []
        change(raws)
        fd, tmp_name = tempfile.mkstemp(prefix=".anchors.", suffix=".toml", dir=user_file.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            tmp.write_text(dump_anchors(raws), encoding="utf-8")
            load_files([shipped_roster_path(), tmp])
            if before_commit is not None:
                before_commit()
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, user_file)
        finally:
            tmp.unlink(missing_ok=True)
        if after_commit is not None:
            after_commit()
    return user_file
