"""What one loaded engine keeps of voices, owned by that engine: no module-level cache keyed on an engine.

:class:`AnchorPrompt` is one anchor's prompt in one language. :class:`VoiceState` holds an engine's anchor
prompts on its device (by anchor and language), the prompt files it loaded (by content digest), its blends
(by anchors, language and alpha) and the prompts it made from recordings (by path, modification time and
transcript). It is the :class:`~omnistudio.engine.engine.Engine`'s ``voice_state``, so it goes when the
engine goes; the voices layer fills it (:mod:`omnistudio.voices.state`). :meth:`VoiceState.forget` is the one
"forget a voice": its prompts and every blend it is part of, rebuilt on next use. Call on the engine's
thread (a link's ``forget_voice`` does)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from omnistudio.engine.morph import BlendedPrompt
    from omnistudio.engine.upstream import VoicePrompt

RecordingKey = tuple[str, float, str]  # a recording's resolved path, its modification time, its transcript
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
    """An engine's voices: anchor prompts, loaded prompt files, blends, prompts made from recordings."""

    def __init__(self) -> None:
        self.prompts: dict[tuple[str, str], AnchorPrompt] = {}  # (anchor, lang) -> its prompt on the device
        self.prompt_files: dict[str, AnchorPrompt] = {}  # a prompt file's sha256 -> its prompt
        self.blends: dict[BlendKey, BlendedPrompt] = {}  # (a, b, lang, alpha) -> its blend
        self.recordings: dict[RecordingKey, VoicePrompt] = {}  # a recording's prompt (Engine.prompt_for)

    def forget(self, anchor: str) -> None:
        """Drop every prompt of ``anchor`` and every blend with it (its recording was replaced or removed)."""
        for key in [k for k in self.prompts if k[0] == anchor]:
            del self.prompts[key]
        for blend in [k for k in self.blends if anchor in k[:2]]:
            del self.blends[blend]
