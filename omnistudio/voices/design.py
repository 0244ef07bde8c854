"""Voice design from words: OpenAI-style ``instructions`` mapped onto OmniVoice's instruct attributes.

``"female, middle-aged, low pitch"`` is read item by item (comma-separated, as OmniVoice's own
``_resolve_instruct`` reads an instruct) against OmniVoice's English vocabulary
(:func:`~omnistudio.voices.roster.attribute_choices`: gender, age, pitch, style, accent; one item per
category). Anything else is one line listing what is accepted. A design voice is an anchor without
recordings: its reference is a voice-design render of the roster's calibration sentence with its seed,
so the same instructions and seed give the same prompt every time, in a request (``"voice": "design"``)
and once saved as a named voice (:func:`add_design_voice`), which has the very same recipe.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from omnistudio.checks import check_language, check_seed
from omnistudio.errors import UserError
from omnistudio.voices import roster as rosters
from omnistudio.voices.manage import (
    ATTRIBUTES,
    DEFAULTS,
    AddedVoice,
    VoiceExists,
    check_room,
    check_voice_name,
    prune_recordings,
    refuse_shipped,
    voice_id,
)
from omnistudio.voices.roster import Anchor, attribute_choices

if TYPE_CHECKING:
    from omnistudio.engine.engine import Engine

DESIGN_VOICE = "design"  # the ``voice`` of a request that designs its voice from ``instructions``
DESIGN_FOLDER = "design"  # under the prompt folder: prompts of requests' design voices, named by recipe
MAX_DESIGN_PROMPTS = 256  # the oldest beyond these are removed
MAX_INSTRUCTIONS_CHARS = 400


@dataclass(frozen=True)
class Design:
    """Voice-design attributes, each one of OmniVoice's instruct items (age and pitch defaulted)."""

    gender: str
    age: str = DEFAULTS["age"]
    pitch: str = DEFAULTS["pitch"]
    style: str | None = None
    accent: str | None = None

    def anchor(self, seed: int, anchor_id: str = DESIGN_VOICE, name: str = "design") -> Anchor:
        return Anchor(id=anchor_id, name=name, gender=self.gender, age=self.age, pitch=self.pitch,
                      seed=check_seed(seed), style=self.style, accent=self.accent)

    def instruct(self, lang: str) -> str:
        """What OmniVoice's ``instruct`` gets in ``lang`` (its accents are English-only)."""
        return self.anchor(0).instruct(lang)


def accepted() -> str:
    """The accepted attributes, by category, as one line."""
    return "; ".join(f"{attr}: {', '.join(values)}" for attr, values in attribute_choices().items())


def parse_instructions(text: str | None, lang: str | None = None) -> Design:
    """``instructions`` as a :class:`Design`, or one line naming what is wrong and every accepted attribute.
    A gender is needed (the roster's design voices have one); an accent only in English (``lang``)."""

    raw = (text or "").strip()
    if not raw:
        raise UserError("instructions are empty: give voice-design attributes such as 'female, low pitch' "
                        f"(accepted: {accepted()})")
    if len(raw) > MAX_INSTRUCTIONS_CHARS:
        raise UserError(f"instructions are {len(raw)} characters; the limit is {MAX_INSTRUCTIONS_CHARS}")
    choices = attribute_choices()
    found: dict[str, str] = {}
    for item in (" ".join(i.lower().split()) for i in re.split(r"[,，]", raw)):
        if not item:
            continue
        attr = next((a for a, values in choices.items() if item in values), None)
        if attr is None:
            close = difflib.get_close_matches(item, [v for vs in choices.values() for v in vs], n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise UserError(f"instructions: '{item}' is not a voice-design attribute OmniVoice accepts{hint}; "
                            f"accepted: {accepted()}")
        if attr in found and found[attr] != item:
            raise UserError(f"instructions: '{found[attr]}' and '{item}' are both a {attr}: give one")
        found[attr] = item
    if "gender" not in found:
        raise UserError("instructions need a gender (female or male) besides the other attributes")
    if found.get("accent") and lang is not None and check_language(lang) != "en":
        raise UserError(f"instructions: OmniVoice's accents are for English speech; leave "
                        f"'{found['accent']}' out for {lang}")
    return Design(found["gender"], found.get("age", DEFAULTS["age"]), found.get("pitch", DEFAULTS["pitch"]),
                  found.get("style"), found.get("accent"))


@dataclass(frozen=True)
class DesignPrompt:
    """A request's design voice: its prompt file, and what the model was given to make it."""

    path: Path
    instruct: str
    seed: int
    lang: str
    source_sha256: str  # the recipe's hash: a saved voice with the same one sounds the same


def design_prompt(engine: Engine, design: Design, seed: int, lang: str, folder: Path | None = None) -> DesignPrompt:
    """The prompt of ``design`` with ``seed`` in ``lang``: built once (a voice-design render on ``engine``:
    call it on the engine's thread) and saved as ``<prompts>/design/<hash>.omni_prompt.safetensors``, the
    hash of the recipe and the model, so a request never names a file."""
    # lazy: start-up (numpy)
    from omnistudio.voices.prompts import SUFFIX, design_source, prompt_dir, prompt_from_source, save_prompt

    lang = check_language(lang)
    roster = rosters.load_roster()
    source = design_source(roster, design.anchor(seed), lang)
    key = hashlib.sha256(f"{source.sha256}\0{engine.loaded.fingerprint}".encode()).hexdigest()[:32]
    folder = folder or prompt_dir() / DESIGN_FOLDER
    path = folder / f"{key}{SUFFIX}"
    if not path.is_file():
        prompt, _cal = prompt_from_source(engine, source, DESIGN_VOICE)
        save_prompt(path, prompt)
        _prune(folder, SUFFIX)
    return DesignPrompt(path, source.instruct, source.seed, lang, source.sha256)


def _prune(folder: Path, suffix: str) -> None:
    files = sorted(folder.glob("*" + suffix), key=lambda p: p.stat().st_mtime)
    for old in files[:-MAX_DESIGN_PROMPTS]:
        old.unlink(missing_ok=True)


def add_design_voice(name: str, instructions: str | Design, seed: int, *, replace: bool = False,
                     max_custom: int | None = None) -> AddedVoice:
    """Save a design voice as a named custom voice: the attributes of ``instructions`` and ``seed``, no
    recording, so it is designed in every language, the same voice every time (the recipe of a request's
    ``"voice": "design"`` with these instructions and seed). A name taken needs ``replace``
    (:class:`~omnistudio.voices.manage.VoiceExists`), which replaces the whole voice; a shipped anchor is
    never changed. The prompt is built on first use, or by the caller."""
    design = instructions if isinstance(instructions, Design) else parse_instructions(instructions)
    anchor_id = voice_id(name)
    seed = check_seed(seed)
    user_file = rosters.user_roster_path()
    refuse_shipped(anchor_id, user_file)
    created = [True]

    def change(raws: list[dict[str, object]]) -> None:
        index = next((i for i, r in enumerate(raws) if r.get("id") == anchor_id), None)
        created[0] = index is None
        if index is not None and not replace:
            raise VoiceExists(f"voice '{anchor_id}' already exists: ask to replace it (--replace, replace=true), "
                              "or choose another name")
        if index is None:
            check_room(raws, max_custom)
        entry = {"id": anchor_id, "name": check_voice_name(name),
                 **{attr: getattr(design, attr) for attr in ATTRIBUTES}, "seed": seed}
        if index is None:
            raws.append(entry)
        else:
            raws[index] = entry

    def prune() -> None:
        prune_recordings(user_file)

    rosters.update_user_roster(change, after_commit=prune)
    return AddedVoice(id=anchor_id, name=check_voice_name(name), kind="design", lang=None, transcript=None,
                      transcript_source=None, note=f"designed from: {design.instruct('en')}",
                      created=created[0], seed=seed, attributes={a: getattr(design, a) for a in ATTRIBUTES},
                      roster=user_file)
