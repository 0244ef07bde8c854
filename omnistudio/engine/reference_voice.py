"""The synthetic reference voice that engine timings speak with: the benches' (bench/corpus.py re-exports it)
and the CPU calibration's. A voiced-like signal, so no recording has to ship; ``numpy`` loads when one is made."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from omnistudio.engine.engine import Engine
    from omnistudio.engine.upstream import VoicePrompt

REF_TEXT = "This is the reference voice for our test."
REF_SR = 24_000


def reference_wave(seconds: float = 3.0, sr: int = REF_SR) -> np.ndarray:
    """The test voice: harmonics of a gliding 130 Hz under a syllable envelope, float32."""
    # lazy: start-up (numpy)
    import numpy as np

    t = np.arange(int(seconds * sr)) / sr
    phase = 2 * np.pi * np.cumsum(130 + 25 * np.sin(2 * np.pi * 0.6 * t)) / sr
    wave = sum(np.sin(k * phase) / k for k in range(1, 9)) * (0.5 + 0.5 * np.sin(2 * np.pi * 3.5 * t)) ** 2
    return (0.12 * wave).astype(np.float32)


def reference_prompt(engine: Engine, seconds: float = 3.0) -> VoicePrompt:
    """``reference_wave`` encoded as ``engine``'s voice prompt (with ``REF_TEXT`` as its transcript)."""
    return engine.prompt_from_audio(reference_wave(seconds), REF_SR, REF_TEXT)
