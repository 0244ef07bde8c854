"""Shared fixtures: an isolated OMNISTUDIO_HOME, one thread for torch, a tiny engine, a reference clip,
and a roster of recorded anchors with different voices (tests/voices_support.py).

Under CI (``CI`` set), a skipped test is reported as a failure: a CI run that lacks flite, the
Whisper model or the null sink must fail, not pass with the device and speech tests skipped."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from voices_support import in_ci

SR = 24_000


@pytest.fixture(scope="session", autouse=True)
def omnistudio_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every file the program writes goes under a per-run folder (or OMNISTUDIO_TEST_HOME, to reuse checkpoints)."""
    home = Path(os.environ.get("OMNISTUDIO_TEST_HOME") or tmp_path_factory.mktemp("omnistudio-home"))
    os.environ["OMNISTUDIO_HOME"] = str(home)
    os.environ.pop("OMNISTUDIO_MODEL", None)
    # The automatic dtype is fp32 in tests on every machine (bf16 tests ask for it); see engine/model.py.
    os.environ["OMNISTUDIO_CPU_BF16"] = "0"
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


@pytest.fixture(scope="session")
def bf16_engine(omnistudio_home: Path):  # noqa: ANN201
    """The same tiny checkpoint with a bf16 backbone (stock sampler), for the per-dtype tests."""
    from omnistudio.engine.engine import Engine

    return Engine.load("tiny", device="cpu", dtype="bf16")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:  # noqa: ARG001
    """Under CI a skip is a failure: the run says what is missing instead of passing without it."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and in_ci() and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI={os.environ.get('CI')}, which must run every test: {reason}"


# --------------------------------------------------------------- different voices
@pytest.fixture(scope="session")
def voice_roster_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The recorded-anchor roster (ruby, storm, atlas, valentina: four flite speakers), written once."""
    import shutil

    from voices_support import flite_missing_message, write_roster

    if in_ci() and shutil.which("flite") is None:
        pytest.fail(flite_missing_message())
    return write_roster(tmp_path_factory.mktemp("voice-roster"))


@pytest.fixture(scope="session")
def voice_prompts_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("voice-prompts")


@pytest.fixture
def voice_roster(voice_roster_file: Path, voice_prompts_dir: Path, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """Make the recorded-anchor roster THE roster for this test (OMNISTUDIO_ROSTER, no user roster),
    with its own prompt folder, so its prompts never mix with the shipped design-mode ones.
    Use it with ``voice_engine``/``voice_stock_engine`` (engines that only ever see this roster)."""
    from omnistudio.voices.roster import ROSTER_ENV, load_roster

    monkeypatch.setenv(ROSTER_ENV, str(voice_roster_file))
    monkeypatch.setattr("omnistudio.voices.prompts.prompt_dir", lambda: voice_prompts_dir)
    monkeypatch.setattr("omnistudio.voices.roster.user_roster_path", lambda: tmp_path / "no-user-roster.toml")
    return load_roster()


@pytest.fixture(scope="session")
def voice_engine(tiny_engine):  # noqa: ANN001, ANN201
    """The tiny model behind the fast sampler, used only with ``voice_roster`` (its own prompt cache)."""
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.sampler import FastSampler

    return Engine(tiny_engine.loaded, sampler=FastSampler(tiny_engine.model))


@pytest.fixture(scope="session")
def voice_stock_engine(tiny_engine):  # noqa: ANN001, ANN201
    """The tiny model behind OmniVoice's stock loop, used only with ``voice_roster``."""
    from omnistudio.engine.engine import Engine

    return Engine(tiny_engine.loaded)
