"""Test audio: the reference clip and its transcript, and tones."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SR = 24_000


def make_reference(path: Path, seconds: float = 3.0, sr: int = SR, seed: int = 0) -> Path:
    """A voiced-like test signal (harmonics with a syllable envelope), written as WAV."""
    import soundfile as sf

    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    f0 = 140 + 20 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    voiced = sum(np.sin(k * phase) / k for k in range(1, 8))
    envelope = 0.5 * (1 + np.sin(2 * np.pi * 4 * t)) ** 2
    wave = 0.15 * voiced * envelope + 0.002 * rng.standard_normal(t.size)
    sf.write(str(path), wave.astype(np.float32), sr)
    return path


REF_TEXT = "This is the reference voice for our test."


def tone(seconds: float = 0.5, freq: float = 220.0, sr: int = SR, amp: float = 0.2) -> np.ndarray:
    """A steady sine, float32 mono."""
    t = np.arange(int(seconds * sr)) / sr
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def same_take(a: np.ndarray, b: np.ndarray, atol: float = 1e-5) -> bool:
    """The same rendered sentence: equal length and every sample within ``atol`` (a wrong voice, blend or
    seed moves samples by orders of magnitude more). Renders on a take's worker thread have been seen
    differing from the same synthesis on the test's thread by ~1e-7 after other tests ran on the same
    pytest worker (float reductions; docs/decisions.md), so takes across threads are compared this way."""
    return a.shape == b.shape and bool(np.max(np.abs(a - b), initial=0.0) <= atol)
