"""The voices layer's door to an engine's voice state (:class:`~omnistudio.engine.voice_state.VoiceState`, which
the engine owns): the anchor prompts, prompt files and blends this layer fills."""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnistudio.engine.voice_state import AnchorPrompt, BlendKey, VoiceState

if TYPE_CHECKING:
    from omnistudio.engine.engine import Engine

__all__ = ["AnchorPrompt", "BlendKey", "VoiceState", "voice_state"]


def voice_state(engine: Engine) -> VoiceState:
    """``engine``'s voice state."""
    return engine.voice_state
