"""Shared fixtures: an isolated OMNISTUDIO_HOME, one thread for torch, a tiny engine, a reference clip."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

SR = 24_000


@pytest.fixture(scope="session", autouse=True)
def omnistudio_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every file the program writes goes under a per-run folder (or OMNISTUDIO_TEST_HOME, to reuse checkpoints)."""
    home = Path(os.environ.get("OMNISTUDIO_TEST_HOME") or tmp_path_factory.mktemp("omnistudio-home"))
    os.environ["OMNISTUDIO_HOME"] = str(home)
    os.environ.pop("OMNISTUDIO_MODEL", None)
    import torch

    torch.set_num_threads(1)
    return home


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


@pytest.fixture(scope="session")
def ref_wav(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_reference(tmp_path_factory.mktemp("ref") / "ref.wav")


@pytest.fixture(scope="session")
def tiny_engine(omnistudio_home: Path):  # noqa: ANN201
    """One tiny random-weight engine for the whole run (stock sampler)."""
    from omnistudio.engine.engine import Engine

    return Engine.load("tiny", device="cpu")
