"""Custom voices: add, remove and describe the anchors of the user roster.

The one implementation behind ``omnistudio voices add``, the server's ``/v1/audio/voices`` routes and
the MCP server's ``add_voice`` tool: every client gets the same checks (the recording's format, length,
loudness, NaN and silence by :func:`~omnistudio.engine.reference.read_reference`; the name; the voice-design
attributes against OmniVoice's own vocabulary; a name already taken, refused without ``replace``), the same
file lock (:func:`~omnistudio.voices.roster.update_user_roster`: two adds at once both land) and the same
storage: a recording is stored as ``recordings/<sha256>.<format>`` next to the user roster, named by its
content, never by anything the caller named. A recording no entry refers to any more is removed.

Nothing here loads a model: building the prompt is the caller's (``prevectorize``, or the server on its
engine thread), and a transcript is heard only by the ``transcriber`` the caller passes.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from omnistudio.checks import check_language, check_seed
from omnistudio.commit import atomic_write_bytes
from omnistudio.errors import UserError
from omnistudio.voices import roster as rosters
from omnistudio.voices.roster import ID_RE, LANGS, attribute_choices, read_toml, slug

if TYPE_CHECKING:
    import numpy as np

    from omnistudio.voices.asr import Transcriber

RECORDINGS = "recordings"  # beside the user roster file
RESERVED_IDS = frozenset({"design"})  # "voice": "design" is a request's own voice design (server)
MAX_NAME_CHARS = 80
ATTRIBUTES = ("gender", "age", "pitch", "style", "accent")
DEFAULTS = {"age": "middle-aged", "pitch": "moderate pitch"}
_PATHLIKE = re.compile(r"[/\\\x00-\x1f\x7f]|\.\.|^[.~]")


class VoiceExists(UserError):
    """The name is taken by a voice this would change (give ``replace`` to change it)."""


class BuiltInVoice(UserError):
    """The voice is a shipped anchor: it cannot be replaced or removed."""


class UnknownVoice(UserError):
    """No voice has that id."""


class VoiceLimit(UserError):
    """The user roster already holds the most custom voices the caller allows."""


@dataclass(frozen=True)
class AddedVoice:
    """What :func:`add_voice` (or :func:`~omnistudio.voices.design.add_design_voice`) stored."""

    id: str  # the anchor id ('Ana Paz' -> ana_paz): the ``voice`` every client speaks it with
    name: str
    kind: Literal["recording", "design"]
    lang: str | None  # the recording's language (None for a design voice: designed in every language)
    transcript: str | None  # the transcript stored with the recording (the prompt conditions on it)
    transcript_source: Literal["given", "asr"] | None  # "asr": heard by the transcriber (none was given)
    asr_text: str | None = None  # what the transcriber heard (also when a transcript was given)
    agreement: float | None = None  # 1 - WER of the heard text against the given transcript
    note: str = ""
    recording_sha256: str | None = None  # the stored recording's content hash (its file name)
    recording: Path | None = None  # where it is stored
    consent: str | None = None
    created: bool = True  # False: an existing custom voice gained a language or was replaced
    seed: int = 0
    attributes: dict[str, str | None] = field(default_factory=dict)  # gender, age, pitch, style, accent
    roster: Path = Path()

    def as_dict(self) -> dict[str, object]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class RemovedVoice:
    id: str
    name: str
    languages: tuple[str, ...]
    prompts_removed: int
    recordings_removed: int


# ------------------------------------------------------------------ checks
def check_voice_name(name: str | None) -> str:
    """A display name, whitespace collapsed; one that looks like a path (``/``, ``\\``, ``..``, a leading
    ``.`` or ``~``, control characters) is refused rather than turned into an id."""
    text = " ".join((name or "").split())
    if not text:
        raise UserError("the voice needs a name")
    if len(text) > MAX_NAME_CHARS:
        raise UserError(f"the voice name is {len(text)} characters; the limit is {MAX_NAME_CHARS}")
    if _PATHLIKE.search(text):
        raise UserError(f"the voice name {text!r} looks like a path: use letters, digits and spaces")
    return text


def voice_id(name: str | None) -> str:
    """The anchor id a display name makes (``'Ana Paz'`` -> ``ana_paz``), checked."""
    anchor_id = slug(check_voice_name(name))
    if anchor_id in RESERVED_IDS:
        raise UserError(f"'{anchor_id}' is reserved (voice 'design' is a request's own voice design): choose "
                        "another name")
    return anchor_id


def check_voice_id(value: str | None) -> str:
    """An id as a route or a tool names it: lowercase letters, digits and ``_`` only (never a path)."""
    anchor_id = (value or "").strip().lower()
    if not ID_RE.match(anchor_id):
        raise UserError(f"{value!r} is not a voice id: lowercase letters, digits or _, starting with a letter")
    return anchor_id


def check_attributes(**given: str | None) -> dict[str, str | None]:
    """Voice-design attributes (gender, age, pitch, style, accent), each one of OmniVoice's own instruct
    items or None; lowercase."""

    choices = attribute_choices()
    out: dict[str, str | None] = {}
    for attr in ATTRIBUTES:
        value = given.get(attr)
        if value is None or not str(value).strip():
            out[attr] = None
            continue
        text = " ".join(str(value).lower().split())
        if text not in choices[attr]:
            close = difflib.get_close_matches(text, choices[attr], n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise UserError(f"{attr} {value!r} is not one OmniVoice accepts ({hint}use one of: "
                            f"{', '.join(choices[attr])})")
        out[attr] = text
    return out


# -------------------------------------------------------------------- add
def add_voice(name: str, lang: str, recording: Path | bytes, *, transcript: str | None = None,
              transcriber: Transcriber | None = None, gender: str | None = None, age: str | None = None,
              pitch: str | None = None, style: str | None = None, accent: str | None = None,
              seed: int | None = None, consent: str | None = None, replace: bool = False,
              max_custom: int | None = None, label: str | None = None, require_consent: bool = True,
              hear_gender: bool = False) -> AddedVoice:
    """Add a voice (or a language of a custom voice) to the user roster from a reference recording.

    ``recording``: a file, or the bytes of one (an upload: ``label`` names it in errors, e.g. "the
    uploaded recording"). ``transcript``: its exact words; without it ``transcriber`` hears them (and the
    answer says so: ``transcript_source == "asr"``); with both, the transcriber's words are stored when it
    hears any (the CLI's ``--ref-text`` with ``--asr-model``). A new voice needs ``gender`` (its voice in
    the other language is designed from the attributes and ``seed``, by default one derived from the id);
    with ``hear_gender`` a new voice given none has it heard from the recording's pitch (OpenAI's
    ``voices.create`` sends none).
    ``consent`` is stored with the recording, and required (a statement from the speaker) unless
    ``require_consent`` is off: only the CLI's ``voices add`` turns it off, for a user's own voice on
    their own machine; the API and MCP never do. ``replace``: change a custom voice this would otherwise
    refuse to (:class:`VoiceExists`); a shipped anchor is never changed (:class:`BuiltInVoice`).
    ``max_custom``: refuse a new voice once the user roster holds that many (:class:`VoiceLimit`).
    Every refusal is one line, with the roster and the recordings unchanged. The prompt is not built
    here: it is built on first use, or by the caller (the server builds it at once)."""
    lang = check_language(lang)
    anchor_id = voice_id(name)
    attrs = check_attributes(gender=gender, age=age, pitch=pitch, style=style, accent=accent)
    seed = None if seed is None else check_seed(seed)
    consent = " ".join(consent.split()) if consent and consent.strip() else None
    if consent is None and require_consent:
        raise UserError("the voice needs a consent statement from its speaker (consent)")
    user_file = rosters.user_roster_path()
    refuse_shipped(anchor_id, user_file)
    folder = user_file.parent / RECORDINGS
    folder.mkdir(parents=True, exist_ok=True)
    staged = _stage(recording, folder)
    try:
        wave, sr = _read(staged, recording, label)
        heard_gender = _pitch_gender(wave, sr) if hear_gender and attrs["gender"] is None else None
        sha, ext = _sha256(staged), _extension(staged)
        heard = _transcript(wave, sr, lang, transcript, transcriber)
        stored = Path(RECORDINGS) / f"{sha[:32]}{ext}"
        created = [True]

        def change(raws: list[dict[str, object]]) -> None:
            """Under the roster lock: add the entry, or (with replace) update it."""
            entry = next((r for r in raws if r.get("id") == anchor_id), None)
            created[0] = entry is None
            if entry is not None and not replace:
                clash = [f"its {lang} recording"] if lang in entry else []
                clash += [a for a, v in attrs.items() if v is not None and entry.get(a) not in (None, v)]
                if clash:
                    raise VoiceExists(f"voice '{anchor_id}' already exists and this would replace "
                                      f"{', '.join(clash)}: ask to replace it (--replace, replace=true), or "
                                      "choose another name")
            if entry is None:
                if hear_gender and attrs["gender"] is None:
                    if heard_gender is None:
                        raise UserError("no voiced speech in the recording to tell the voice's gender by: send gender")
                    attrs["gender"] = heard_gender
                entry = _new_entry(raws, anchor_id, name, attrs, max_custom)
            _set_attributes(entry, attrs, seed)
            table = {"recording": stored.as_posix(), "transcript": heard[0]}
            entry[lang] = {**table, **({"consent": consent} if consent else {})}

        def place() -> None:
            """Under the lock, after the new roster checked as a whole, before it replaces the old one."""
            target = user_file.parent / stored
            if target.is_file():  # the same content is stored already (its name is its hash)
                return
            if staged != recording:
                os.replace(staged, target)
            else:
                _copy(staged, target)

        def prune() -> None:
            prune_recordings(user_file)

        rosters.update_user_roster(change, before_commit=place, after_commit=prune)
    finally:
        if staged != recording:
            staged.unlink(missing_ok=True)
    return AddedVoice(id=anchor_id, name=check_voice_name(name), kind="recording", lang=lang, transcript=heard[0],
                      transcript_source=heard[1], asr_text=heard[2], agreement=heard[3], note=heard[4],
                      recording_sha256=sha, recording=user_file.parent / stored, consent=consent,
                      created=created[0], seed=_stored_seed(anchor_id), attributes=_stored_attributes(anchor_id),
                      roster=user_file)


def refuse_shipped(anchor_id: str, user_file: Path) -> None:
    """A :class:`BuiltInVoice` when ``anchor_id`` is a shipped anchor (never replaced)."""
    existing = rosters.load_roster().anchors.get(anchor_id)
    if existing is not None and existing.origin != user_file:
        raise BuiltInVoice(f"'{anchor_id}' is a built-in anchor (the shipped roster): choose another name")


def _new_entry(raws: list[dict[str, object]], anchor_id: str, name: str, attrs: dict[str, str | None],
               max_custom: int | None) -> dict[str, object]:
    check_room(raws, max_custom)
    if not attrs.get("gender"):
        raise UserError("a new voice needs a gender (male or female) for its voice design in the other language")
    seed = int(hashlib.sha256(anchor_id.encode()).hexdigest()[:8], 16)
    entry: dict[str, object] = {"id": anchor_id, "name": check_voice_name(name), **attrs, "seed": seed}
    raws.append(entry)
    return entry


def check_room(raws: Sequence[Mapping[str, object]], max_custom: int | None) -> None:
    """A :class:`VoiceLimit` when the user roster's entries (``raws``) leave no room for a new voice."""
    if max_custom is not None and len(raws) >= max_custom:
        raise VoiceLimit(f"the roster already holds {len(raws)} custom voices, the most allowed "
                         f"({max_custom}): delete one first")


def _set_attributes(entry: dict[str, object], attrs: dict[str, str | None], seed: int | None) -> None:
    entry.update({attr: value for attr, value in attrs.items() if value is not None})
    for attr, default in DEFAULTS.items():
        entry[attr] = entry.get(attr) or default
    if seed is not None:
        entry["seed"] = seed


def _stored_seed(anchor_id: str) -> int:
    return rosters.load_roster().get(anchor_id).seed


def _stored_attributes(anchor_id: str) -> dict[str, str | None]:
    anchor = rosters.load_roster().get(anchor_id)
    return {attr: getattr(anchor, attr) for attr in ATTRIBUTES}


def _stage(recording: Path | bytes, folder: Path) -> Path:
    """The recording as a file: the path given, or the bytes written to a temporary file in ``folder``."""
    if not isinstance(recording, (bytes, bytearray, memoryview)):
        return Path(recording)
    fd, name = tempfile.mkstemp(prefix=".upload-", suffix=".part", dir=folder)
    with os.fdopen(fd, "wb") as fh:
        fh.write(recording)
    return Path(name)


def _read(staged: Path, recording: Path | bytes, label: str | None) -> tuple[np.ndarray, int]:
    # lazy: start-up (numpy)
    from omnistudio.engine.reference import read_reference

    return read_reference(staged, label or (None if staged == recording else "the uploaded recording"))


def _pitch_gender(wave: np.ndarray, sample_rate: int) -> str | None:
    # lazy: start-up (librosa)
    from omnistudio.voices.pitch import gender_from_pitch

    return gender_from_pitch(wave, sample_rate)


def _sha256(path: Path) -> str:
    # lazy: start-up (numpy)
    from omnistudio.voices.prompts import sha256_file

    return sha256_file(path)


def _extension(path: Path) -> str:
    """The file's format as libsndfile read it (never the name it came with): .wav, .flac, .ogg, .mp3..."""
    # lazy: start-up (soundfile)
    import soundfile as sf

    return "." + re.sub(r"[^a-z0-9]", "", str(sf.info(str(path)).format).lower())


def _copy(source: Path, target: Path) -> None:
    atomic_write_bytes(target, lambda t: shutil.copyfile(source, t), suffix=target.suffix)


Heard = tuple[str, Literal["given", "asr"], str | None, float | None, str]


def _transcript(wave: np.ndarray, sr: int, lang: str, transcript: str | None, transcriber: Transcriber | None) -> Heard:
    """(transcript to store, where it came from, what the ASR heard, agreement, note)."""
    # lazy: start-up (numpy)
    from omnistudio.engine.reference import check_transcript
    from omnistudio.voices.asr import calibrate

    given = check_transcript(transcript, "voice's") if transcript is not None else None
    if transcriber is None:
        if given is None:
            raise UserError("give the recording's exact transcript, or an ASR model to transcribe it")
        return given, "given", None, None, "transcript given"
    if given is None and not transcriber.can_hear(lang):
        raise UserError(f"the ASR model hears English only: give the {lang} recording's exact transcript")
    cal = calibrate(transcriber, wave, sr, lang, given)
    source: Literal["given", "asr"] = "asr" if cal.source == "asr" else "given"
    return cal.transcript, source, cal.asr_text, cal.agreement, cal.note


def prune_recordings(user_file: Path | None = None) -> int:
    """Remove the files of ``recordings/`` that no entry of the user roster refers to (run under its
    lock, after a commit); returns how many."""

    user_file = user_file or rosters.user_roster_path()
    folder = user_file.parent / RECORDINGS
    if not folder.is_dir():
        return 0
    raws = read_toml(user_file).get("anchor", []) if user_file.is_file() else []
    used = {(user_file.parent / raw[lang]["recording"]).resolve() for raw in raws for lang in LANGS
            if isinstance(raw.get(lang), dict) and "recording" in raw[lang]}
    removed = 0
    for path in folder.iterdir():
        if path.is_file() and not path.name.startswith(".") and path.resolve() not in used:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


# ----------------------------------------------------------------- remove
def remove_voice(anchor_id: str) -> RemovedVoice:
    """Remove a custom voice from the user roster, with its saved prompts and its recordings (those no
    other voice uses). A shipped anchor is refused (:class:`BuiltInVoice`), an unknown id too
    (:class:`UnknownVoice`), and a voice another one is matched to, with the one that names it."""
    # lazy: start-up (numpy)
    from omnistudio.voices.prompts import prompt_path

    key = check_voice_id(anchor_id)
    user_file = rosters.user_roster_path()
    existing = rosters.load_roster().anchors.get(key)
    if existing is None:
        raise UnknownVoice(f"no voice '{key}' (see GET /v1/audio/voices or `omnistudio voices list`)")
    if existing.origin != user_file:
        raise BuiltInVoice(f"'{key}' is a built-in anchor (the shipped roster): only custom voices can be removed")
    found: list[dict[str, object]] = []
    counts = [0, 0]

    def change(raws: list[dict[str, object]]) -> None:
        found.extend(r for r in raws if r.get("id") == key)
        if not found:
            raise UnknownVoice(f"no voice '{key}' (removed meanwhile)")
        users = [f"'{r.get('id')}' ({lang})" for r in raws for lang in LANGS
                 if isinstance(table := r.get(lang), dict) and table.get("matched") == key]
        if users:
            raise UserError(f"voice '{key}' is matched by {', '.join(users)}: remove or change that first")
        raws[:] = [r for r in raws if r.get("id") != key]

    def clean() -> None:
        counts[1] = prune_recordings(user_file)
        for lang in LANGS:
            path = prompt_path(key, lang)
            if path.exists():
                path.unlink()
                counts[0] += 1

    rosters.update_user_roster(change, after_commit=clean)
    return RemovedVoice(key, existing.name, tuple(existing.voices), counts[0], counts[1])


# ------------------------------------------------------------------ details
@dataclass(frozen=True)
class VoiceLanguage:
    """How a voice sounds in one language: ``kind`` recording | design | matched, and its prompt's state."""

    kind: Literal["recording", "design", "matched"]
    prompt: str  # missing | ready | stale | invalid | error | unchecked (see prompts.prompt_state)
    transcript: str | None = None
    consent: str | None = None
    recording_sha256: str | None = None
    matched: str | None = None
    instruct: str | None = None  # the voice-design instruct (design only)
    source_sha256: str | None = None  # the prompt's recipe hash (recording and transcript, or design and seed)


@dataclass(frozen=True)
class VoiceDetails:
    id: str
    name: str
    custom: bool
    seed: int
    attributes: dict[str, str | None]
    languages: dict[str, VoiceLanguage]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def voice_details(anchor_id: str, fingerprint: str | None = None) -> VoiceDetails:
    """A voice as a client reads it (no server path: a recording is named by its content hash); prompt
    states are checked against the model ``fingerprint`` (None: "unchecked")."""
    # lazy: start-up (numpy)
    from omnistudio.voices.prompts import prompt_state, source_for

    key = check_voice_id(anchor_id)
    roster = rosters.load_roster()
    anchor = roster.anchors.get(key)
    if anchor is None:
        raise UnknownVoice(f"no voice '{key}' (see GET /v1/audio/voices or `omnistudio voices list`)")
    languages: dict[str, VoiceLanguage] = {}
    for lang in LANGS:
        voice = anchor.voice(lang)
        state, _why = prompt_state(roster, key, lang, fingerprint)
        try:
            source: str | None = source_for(roster, key, lang).sha256
        except UserError:  # a recording gone missing: its state says "error"
            source = None
        if voice.matched:
            languages[lang] = VoiceLanguage("matched", state, matched=voice.matched, source_sha256=source)
        elif voice.recording is not None:
            sha = _sha256(voice.recording) if voice.recording.is_file() else None
            languages[lang] = VoiceLanguage("recording", state, voice.transcript, voice.consent, sha,
                                            source_sha256=source)
        else:
            languages[lang] = VoiceLanguage("design", state, instruct=anchor.instruct(lang), source_sha256=source)
    return VoiceDetails(key, anchor.name, anchor.origin == rosters.user_roster_path(), anchor.seed,
                        {attr: getattr(anchor, attr) for attr in ATTRIBUTES}, languages)
