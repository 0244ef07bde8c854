"""The one voice resolver: anchor | anchor:lang | Blend | recording + transcript | saved prompt.

A voice travels between layers as a :class:`VoiceRef` (a frozen, hashable value with a canonical
``key()``); :func:`parse_voice` reads the text forms users type (``ruby``, ``ruby:es``,
``ruby+storm@0.7``); :func:`resolve_voice` turns a reference and a language into the prompt object
the Engine conditions on, building a missing or stale anchor prompt on the way (with progress).
Every client (studio, ``render``, ``say``, the server) resolves voices here and nowhere else.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from omnistudio.checks import check_language
from omnistudio.errors import UserError
from omnistudio.script import SPEAKER_RE, Blend, parse_tag
from omnistudio.voices.blend import anchor_blend, blend_cache_for, blend_key
from omnistudio.voices.roster import load_roster
from omnistudio.voices.state import voice_state

if TYPE_CHECKING:
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.upstream import VoicePrompt

Progress = Callable[[str], None]

__all__ = ["Blend", "VoiceRef", "parse_voice", "resolve_voice", "voice_action", "voice_label"]


def _digest(path: Path, extra: str = "") -> str:
    h = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        h.update(str(path).encode())  # a missing file: resolving it gives the clear error
    h.update(b"\0" + extra.encode())
    return h.hexdigest()[:12]


@dataclass(frozen=True)
class VoiceRef:
    """One voice: exactly one of an anchor id, a :class:`Blend`, a recording (+ transcript), a prompt file.

    Build it with :meth:`anchor_of`, :meth:`blend_of`, :meth:`recording_of`, :meth:`prompt_of` or
    :func:`parse_voice`. ``digest`` (recordings and prompt files) is the sha256 of the content,
    taken when the reference is made, so a changed file is a different voice. A blend at alpha 1 is
    made the plain anchor here, the one place: ``VoiceRef(blend=Blend("ruby", "storm", 1.0))`` equals
    ``VoiceRef(anchor="ruby")`` (key ``ruby``)."""

    anchor: str | None = None
    blend: Blend | None = None
    recording: Path | None = None
    transcript: str | None = None
    prompt: Path | None = None
    digest: str = ""

    def __post_init__(self) -> None:
        given = [x is not None for x in (self.anchor, self.blend, self.recording, self.prompt)]
        if sum(given) != 1:
            raise UserError("a voice is one of: an anchor, a blend, a recording with its transcript, a prompt file")
        if self.blend is not None and self.blend.alpha == 1.0:
            # A blend at alpha 1 overrides nothing (engine/morph.py): it IS its first anchor, with the
            # anchor's key, so the seed policy, the prompt and the caches are the anchor's on every path.
            object.__setattr__(self, "anchor", self.blend.a)
            object.__setattr__(self, "blend", None)
        if self.anchor is not None:
            name = self.anchor.strip().lower()
            if not SPEAKER_RE.match(name):
                raise UserError(f"bad anchor id '{self.anchor}': use letters, digits, '-', '_' or '.'")
            object.__setattr__(self, "anchor", name)
        if self.recording is not None:
            # lazy: start-up (numpy)
            from omnistudio.engine.reference import check_transcript

            object.__setattr__(self, "transcript", check_transcript(self.transcript))
            if not self.digest:
                object.__setattr__(self, "digest", _digest(Path(self.recording), self.transcript or ""))
        if self.prompt is not None and not self.digest:
            object.__setattr__(self, "digest", _digest(Path(self.prompt)))

    @classmethod
    def anchor_of(cls, anchor: str) -> VoiceRef:
        return cls(anchor=anchor)

    @classmethod
    def blend_of(cls, a: str, b: str, alpha: float) -> VoiceRef:
        return cls(blend=Blend(a, b, alpha))

    @classmethod
    def recording_of(cls, audio: Path, transcript: str) -> VoiceRef:
        return cls(recording=Path(audio), transcript=transcript)

    @classmethod
    def prompt_of(cls, path: Path) -> VoiceRef:
        return cls(prompt=Path(path))

    @property
    def kind(self) -> str:
        return ("anchor" if self.anchor is not None else "blend" if self.blend is not None else
                "recording" if self.recording is not None else "prompt")

    def key(self) -> str:
        """Canonical text: ``ruby``, ``ruby+storm@0.70``, ``rec:<sha256-12>``, ``prompt:<sha256-12>``."""
        if self.anchor is not None:
            return self.anchor
        if self.blend is not None:
            return self.blend.key()
        return f"{'rec' if self.recording is not None else 'prompt'}:{self.digest}"

    def anchors(self) -> tuple[str, ...]:
        """The roster anchors this voice needs (none for a recording or a prompt file)."""
        if self.anchor is not None:
            return (self.anchor,)
        if self.blend is not None:
            return (self.blend.a, self.blend.b)
        return ()

    def __str__(self) -> str:
        return voice_label(self)


def voice_label(ref: VoiceRef) -> str:
    """What a person reads: the anchor or blend, or the recording's / prompt's file name."""
    if ref.recording is not None:
        return Path(ref.recording).name
    if ref.prompt is not None:
        return Path(ref.prompt).name
    return ref.key()


def parse_voice(text: str) -> tuple[VoiceRef, str | None]:
    """``ruby`` | ``ruby:es`` | ``ruby+storm@0.7`` | ``ruby+storm@0.7:es`` -> (VoiceRef, lang or None).

    The same syntax as a script's speaker tag (without the brackets); one clear line on bad input."""
    raw = (text or "").strip()
    if not raw:
        raise UserError("the voice is empty: give an anchor id, anchor:lang or a+b@0.7")

    try:
        tag = parse_tag(raw, 0)
    except UserError as exc:
        raise UserError(f"voice '{raw}': {str(exc).removeprefix('line 0: ')}") from None
    if tag.speaker is None:
        raise UserError(f"voice '{raw}' names no anchor")
    if tag.blend is not None:
        return VoiceRef(blend=tag.blend), tag.lang
    return VoiceRef(anchor=tag.speaker), tag.lang


# ----------------------------------------------------------------- resolving
def voice_action(engine: Engine, ref: VoiceRef, lang: str) -> str:
    """What :func:`resolve_voice` will do: ``ready`` (on the device), ``load`` (a saved prompt or a
    file), ``build`` (render/encode a missing or stale prompt), ``blend`` (mix two prompts)."""
    # lazy: start-up (numpy)
    from omnistudio.voices.prompts import cache_for

    if ref.recording is not None:
        return "ready" if _reference_memoized(engine, ref) else "build"
    if ref.prompt is not None:
        return "ready" if ref.digest in voice_state(engine).prompt_files else "load"
    if ref.blend is not None:
        if blend_key(ref.blend.a, ref.blend.b, lang, ref.blend.alpha) in blend_cache_for(engine):
            return "ready"
        actions = [voice_action(engine, VoiceRef(anchor=a), lang) for a in ref.anchors()]
        return "build" if "build" in actions else "blend"
    if cache_for(engine).get(ref.anchor or "", lang) is not None:
        return "ready"
    # lazy: start-up (numpy)
    from omnistudio.voices.prompts import prompt_state

    try:
        state, _why = prompt_state(load_roster(), ref.anchor or "", lang, engine.loaded.fingerprint)
    except Exception:  # noqa: BLE001 - resolve_voice reports the real error
        return "build"
    return "load" if state == "ready" else "build"


def _reference_memoized(engine: Engine, ref: VoiceRef) -> bool:
    # lazy: start-up (numpy)
    from omnistudio.engine.reference import Reference

    return engine.holds_prompt_for(Reference(Path(ref.recording or ""), ref.transcript or ""))


def resolve_voice(engine: Engine, ref: VoiceRef, lang: str, progress: Progress | None = None) -> VoicePrompt:
    """The prompt object the Engine takes for ``ref`` in ``lang`` (missing or stale prompts built
    and saved; everything cached per engine, so a second call is a dictionary lookup)."""
    lang = check_language(lang)
    if ref.anchor is not None:
        # lazy: start-up (numpy)
        from omnistudio.voices.prompts import anchor_prompt

        return anchor_prompt(engine, ref.anchor, lang, progress=progress)
    if ref.blend is not None:
        return anchor_blend(engine, ref.blend.a, ref.blend.b, lang, ref.blend.alpha, progress=progress)
    if ref.recording is not None:
        # lazy: start-up (numpy)
        from omnistudio.engine.reference import Reference

        return engine.prompt_for(Reference(Path(ref.recording), ref.transcript or ""))

    loaded = voice_state(engine).prompt_files
    if ref.digest not in loaded:
        # lazy: start-up (numpy)
        from omnistudio.voices.prompts import load_prompt

        path = Path(ref.prompt or "")
        if not path.is_file():
            raise UserError(f"voice prompt {path} does not exist")
        loaded[ref.digest] = load_prompt(path, device=engine.loaded.device)
    prompt: VoicePrompt = loaded[ref.digest]
    return prompt
