"""What a take is rendered with (:class:`TakeOptions`), and THE seed policy (:func:`sentence_seed`).

Every client (studio, ``render``, the server) renders sentence ``s`` with
``sentence_seed(base_seed, spoken, voice.key(), s.lang)``, where ``spoken`` is what the text front-end
makes of the written text (:func:`spoken_text`): a stable hash, so the same sentence in the same voice
and language with the same base seed sounds the same wherever it is rendered, whatever its position in
the script, and an unchanged sentence can be reused from the take cache. A lexicon entry that changes
how a sentence is spoken changes its seed and its cache entry; other sentences keep theirs.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from typing import ClassVar, NewType

from omnistudio.audio.finishing import FinishingOptions
from omnistudio.checks import DEFAULT_NUM_STEP, check_batch, check_guidance, check_language, check_num_step, check_seed
from omnistudio.errors import UserError
from omnistudio.text.frontend import normalize as normalize_text
from omnistudio.text.lexicon import Lexicon
from omnistudio.voices.resolve import VoiceRef

SEED_LIMIT = 2**31


def sentence_seed(base_seed: int, text: str, voice_key: str, lang: str) -> int:
    """The seed sentence ``text`` renders with: blake2b of (base seed, text, voice key, language), < 2**31."""
    payload = "\x1f".join((str(int(base_seed)), " ".join(text.split()), voice_key, lang)).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(payload, digest_size=8).digest(), "big") % SEED_LIMIT


def spoken_text(text: str, lang: str, options: TakeOptions) -> str:
    """What the model is asked to say for ``text``: the front-end's spoken form with the take's lexicon
    (``options.normalize`` off: the text as written, whitespace collapsed)."""
    if not options.normalize:
        return " ".join(text.split())
    return normalize_text(text, lang, options.lexicon).text


@dataclass(frozen=True)
class TakeOptions:
    """Synthesis and finishing settings of one take (plain values; ``validated()`` checks them)."""

    num_step: int = DEFAULT_NUM_STEP
    guidance_scale: float = 2.0
    seed: int = 0
    seed_locked: bool = True  # False: every take draws a new base seed (nothing is reused)
    speed: float = 1.0
    batch: int = 1  # consecutive sentences rendered in one diffusion pass (after the first)
    lang: str = "en"  # language of untagged lines
    voice: VoiceRef | None = None  # voice of untagged lines
    finishing: FinishingOptions = field(default_factory=FinishingOptions)
    normalize: bool = True  # the text front-end (numbers, money, dates, abbreviations) before the model
    lexicon: Lexicon = field(default_factory=Lexicon)  # pronunciations the producer set (global + project)

    # Set (on the instance, outside the fields: ``asdict`` and ``==`` never see it) by ``validated()``;
    # ``dataclasses.replace`` makes a new instance, which is unchecked again.
    _checked: ClassVar[bool] = False

    def validated(self) -> ValidTakeOptions:
        """These options with every field checked, or one UserError naming the bad one. Checked once:
        options that ``validated()`` returned come back as they are (a ``replace`` of them is checked
        again)."""
        if self._checked:
            return ValidTakeOptions(self)

        guidance = check_guidance(self.guidance_scale)  # finite, 0..20: the one check every client uses
        try:
            speed = float(self.speed)
        except (TypeError, ValueError):
            raise UserError("speed must be a number") from None
        if not math.isfinite(speed) or not 0.25 <= speed <= 4.0:
            raise UserError(f"speed {self.speed} is out of range 0.25..4")
        batch = check_batch(self.batch)
        if self.voice is not None and not isinstance(self.voice, VoiceRef):
            raise UserError(f"the default voice must be a VoiceRef, got {type(self.voice).__name__}")
        if not isinstance(self.lexicon, Lexicon):
            raise UserError(f"the lexicon must be a Lexicon, got {type(self.lexicon).__name__}")
        valid = replace(self, num_step=check_num_step(self.num_step), guidance_scale=guidance,
                        seed=check_seed(self.seed), seed_locked=bool(self.seed_locked), speed=speed,
                        batch=batch, lang=check_language(self.lang), normalize=bool(self.normalize))
        object.__setattr__(valid, "_checked", True)
        return ValidTakeOptions(valid)

    @property
    def speed_arg(self) -> float | None:
        """What the engine takes for ``speed`` (None: OmniVoice's own duration estimate)."""
        return None if self.speed == 1.0 else self.speed



# TakeOptions that ``validated()`` returned: what a take and its plan hold (they check nothing again).
ValidTakeOptions = NewType("ValidTakeOptions", TakeOptions)
