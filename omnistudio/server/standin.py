"""STAND-IN for the take pipeline of issue 12 (voices/resolve, take/options, take/link, take/pipeline).

Only the names of the agreed contract that the server needs, in their smallest form. This file is
deleted when the real pipeline lands on main; nothing else in the package may import it but the
server's ``pipeline.py`` shim.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from omnistudio.checks import DEFAULT_NUM_STEP, check_alpha, check_language, check_pair
from omnistudio.engine.engine import Timings
from omnistudio.errors import Cancelled, UserError


# ------------------------------------------------------------ voices/resolve
@dataclass(frozen=True)
class Blend:
    a: str
    b: str
    alpha: float

    def __post_init__(self) -> None:
        check_alpha(self.alpha)
        check_pair(self.a, self.b)


@dataclass(frozen=True)
class VoiceRef:
    anchor: str | None = None
    blend: Blend | None = None

    def key(self) -> str:
        if self.blend is not None:
            return f"{self.blend.a}+{self.blend.b}@{self.blend.alpha:.2f}"
        return str(self.anchor)


def parse_voice(text: str) -> tuple[VoiceRef, str | None]:
    from omnistudio.voices.roster import load_roster

    body, _, lang = (text or "").strip().lower().partition(":")
    if not body:
        raise UserError("the voice is empty: give an anchor id such as 'ruby'")
    roster = load_roster()
    lang_code = check_language(lang) if lang else None
    if "+" in body:
        a, _, rest = body.partition("+")
        b, _, alpha = rest.partition("@")
        ref = VoiceRef(blend=Blend(roster.get(a).id, roster.get(b).id, check_alpha(alpha or 0.5)))
    else:
        ref = VoiceRef(anchor=roster.get(body).id)
    return ref, lang_code


def resolve_voice(engine: Any, ref: VoiceRef, lang: str, progress: Any = None) -> Any:
    from omnistudio.voices.blend import anchor_blend
    from omnistudio.voices.prompts import anchor_prompt

    if ref.blend is not None:
        return anchor_blend(engine, ref.blend.a, ref.blend.b, lang, ref.blend.alpha, progress=progress)
    return anchor_prompt(engine, str(ref.anchor), lang, progress=progress)


# -------------------------------------------------------------- take/options
@dataclass(frozen=True)
class TakeOptions:
    num_step: int = DEFAULT_NUM_STEP
    guidance_scale: float = 2.0
    seed: int = 0
    speed: float | None = None
    lang: str = "en"


def sentence_seed(base_seed: int, text: str, voice_key: str, lang: str) -> int:
    digest = hashlib.sha256(f"{base_seed}\0{text}\0{voice_key}\0{lang}".encode()).digest()
    return int.from_bytes(digest[:7], "little")


# ----------------------------------------------------------------- take/link
@dataclass(frozen=True)
class RenderItem:
    index: int
    text: str
    voice: VoiceRef
    lang: str
    seed: int
    pause_s: float = 0.0


@dataclass
class Rendered:
    index: int
    pcm: np.ndarray
    timings: Timings | None
    steps: int
    error: str | None = None


@dataclass(frozen=True)
class PrepareEvent:
    done: int
    total: int
    voice: str
    lang: str
    action: str


class EngineLink(Protocol):
    sample_rate: int

    def prepare(self, voices: list[tuple[VoiceRef, str]], progress: Any = None,
                cancel: threading.Event | None = None) -> None: ...
    def render(self, items: list[RenderItem], options: TakeOptions,
               cancel: threading.Event | None = None) -> list[Rendered]: ...


@dataclass
class LocalEngine:
    engine: Any
    sample_rate: int = field(init=False)

    def __post_init__(self) -> None:
        self.sample_rate = self.engine.sample_rate

    @property
    def info(self) -> dict[str, Any]:
        loaded = self.engine.loaded
        return {"model": loaded.spec.name, "device": str(loaded.device),
                "sampler": "fast" if self.engine.sampler is not None else "stock"}

    def prepare(self, voices: list[tuple[VoiceRef, str]], progress: Any = None,
                cancel: threading.Event | None = None) -> None:
        for ref, lang in voices:
            resolve_voice(self.engine, ref, lang)

    def render(self, items: list[RenderItem], options: TakeOptions,
               cancel: Callable[[], bool] | threading.Event | None = None) -> list[Rendered]:
        should = cancel.is_set if isinstance(cancel, threading.Event) else (cancel or (lambda: False))
        steps = [0]

        def count() -> None:
            steps[0] += 1

        handle = self.engine.on_each_step(should, count)
        try:
            prompts = [resolve_voice(self.engine, i.voice, i.lang) for i in items]
            out = self.engine.synthesize_batch([i.text for i in items], prompts, [i.lang for i in items],
                                               num_step=options.num_step, seeds=[i.seed for i in items],
                                               guidance_scale=options.guidance_scale, speed=options.speed)
        finally:
            handle.remove()
        return [Rendered(i.index, s.pcm, s.timings, steps[0]) for i, s in zip(items, out)]

    def close(self) -> None:
        pass


# ------------------------------------------------------------- take/pipeline
def plan_take(text: str, voice: VoiceRef, lang: str, seed: int, speakers: Any = None) -> list[RenderItem]:
    """Sentences of a script (speaker tags allowed) with voice, lang, seed and the pause after."""
    from omnistudio.audio.finishing import pauses
    from omnistudio.script import blend_parts, parse_script

    script = parse_script(text, lang, speakers=speakers)
    gaps = pauses([s.line for s in script.sentences])
    items = []
    for s, gap in zip(script.sentences, gaps):
        ref = voice
        if s.speaker is not None:
            parts = blend_parts(s.speaker)
            ref = VoiceRef(blend=Blend(*parts)) if parts else VoiceRef(anchor=s.speaker)
        items.append(RenderItem(s.id, s.text, ref, s.lang, sentence_seed(seed, s.text, ref.key(), s.lang), gap))
    return items


__all__ = ["Blend", "Cancelled", "EngineLink", "LocalEngine", "PrepareEvent", "RenderItem", "Rendered",
           "TakeOptions", "VoiceRef", "parse_voice", "plan_take", "resolve_voice", "sentence_seed"]
