"""What one loaded engine keeps of voices, owned by that engine: no module-level cache keyed on an engine.

:class:`AnchorPrompt` is one anchor's prompt in one language. :class:`VoiceState` holds an engine's anchor
prompts on its device (by anchor and language), the prompt files it loaded (by content digest) and its
blends (by anchors, language and alpha). It lives on the :class:`~omnistudio.engine.engine.Engine` it
belongs to (``engine.voice_state``: the core keeps the slot, this layer fills it), so it goes when the
engine goes. :meth:`VoiceState.forget` is the one "forget a voice": its prompts and every blend it is part
of, rebuilt on next use. Call on the engine's thread (a link's ``forget_voice`` does)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from omnistudio.engine.engine import Engine
    from omnistudio.engine.morph import BlendedPrompt

BlendKey = tuple[str, str, str, float]


@dataclass
class AnchorPrompt:
    """What OmniVoice conditions on (VoiceClonePrompt's fields) plus where it came from."""

    ref_audio_tokens: torch.Tensor  # long [8, T]
    ref_text: str
    ref_rms: float
    anchor: str
    lang: str
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        return self.meta.get("model_fingerprint", "")

    @property
    def source_sha256(self) -> str:
        return self.meta.get("source_sha256", "")


class VoiceState:
    """An engine's voices: anchor prompts, loaded prompt files, blends."""

    def __init__(self) -> None:
        self.prompts: dict[tuple[str, str], AnchorPrompt] = {}  # (anchor, lang) -> its prompt on the device
        self.prompt_files: dict[str, AnchorPrompt] = {}  # a prompt file's sha256 -> its prompt
        self.blends: dict[BlendKey, BlendedPrompt] = {}  # (a, b, lang, alpha) -> its blend

    def forget(self, anchor: str) -> None:
        """Drop every prompt of ``anchor`` and every blend with it (its recording was replaced or removed)."""
        for key in [k for k in self.prompts if k[0] == anchor]:
            del self.prompts[key]
        for blend in [k for k in self.blends if anchor in k[:2]]:
            del self.blends[blend]


def voice_state(engine: Engine) -> VoiceState:
    """``engine``'s voice state (made on first use)."""
    state = engine.voice_state
    if not isinstance(state, VoiceState):
        state = engine.voice_state = VoiceState()
    return state
