"""The fastest CPU path per machine, chosen by measurement (issue 52): the calibration picks the fastest of its
candidates, keeps it for this CPU and model, leaves a pinned choice alone; the int8 kernel is measured too, and
int8 tokens are the same run after run for one configuration."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from omnistudio.engine import calibration
from omnistudio.engine.calibration import CpuPath
from omnistudio.errors import UserError

FP32, BF16, FP32_INT8, BF16_INT8 = CpuPath("fp32"), CpuPath("bf16"), CpuPath("fp32", "int8"), CpuPath("bf16", "int8")


def test_the_fastest_candidate_is_picked_and_a_tie_goes_to_the_simpler() -> None:
    times = {FP32: 0.030, BF16: 0.012, BF16_INT8: 0.010, FP32_INT8: 0.020}
    chosen, step_ms = calibration.pick([FP32, BF16, FP32_INT8, BF16_INT8], times.__getitem__)
    assert chosen == BF16_INT8 and step_ms == {"fp32": 30.0, "bf16": 12.0, "fp32 + int8": 20.0, "bf16 + int8": 10.0}
    assert calibration.pick([FP32, BF16], lambda _p: 0.01)[0] == FP32


@pytest.mark.parametrize(("bf16", "int8", "dtype", "quantize", "paths"), [
    (True, True, "auto", "none", [FP32, BF16]),  # int8 stays opt-in
    (True, True, "auto", "auto", [FP32, BF16, FP32_INT8, BF16_INT8]),
    (False, True, "auto", "auto", [FP32, FP32_INT8]),  # emulated bf16 is never a candidate
    (True, False, "auto", "auto", [FP32, BF16]),  # no int8 units: no int8
    (True, True, "bf16", "auto", [BF16, BF16_INT8]),  # a pinned dtype stays
    (True, True, "fp32", "int8", [FP32_INT8]),  # both pinned: one path, nothing to time
])
def test_the_candidates_are_what_this_cpu_and_the_user_allow(bf16: bool, int8: bool, dtype: str, quantize: str,
                                                           paths: list[CpuPath]) -> None:
    assert calibration.candidates(bf16, int8, dtype, quantize) == paths


def test_a_calibration_is_kept_per_cpu_and_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path))
    timed: list[str] = []

    def time_step(path: CpuPath) -> float:
        timed.append(path.label)
        return {"fp32": 0.03, "bf16": 0.01}[path.label]

    first = calibration.stored_or_calibrated("cpu A", "full", [FP32, BF16], time_step)
    assert first.chosen == BF16 and timed == ["fp32", "bf16"] and first.describe().startswith("calibrated")
    again = calibration.stored_or_calibrated("cpu A", "full", [FP32, BF16], time_step)
    assert again.chosen == BF16 and len(timed) == 2  # stored: nothing timed again
    calibration.stored_or_calibrated("cpu B", "full", [FP32, BF16], time_step)  # another CPU: measured
    allowed = calibration.stored_or_calibrated("cpu A", "full", [FP32, BF16, FP32_INT8, BF16_INT8],  # int8 allowed
                                               lambda p: timed.append(p.label) or 0.005)  # type: ignore[func-returns-value]
    assert allowed.chosen == FP32_INT8 and timed[-2:] == ["fp32 + int8", "bf16 + int8"]  # only what was new
    assert len(timed) == 6
    back = calibration.stored_or_calibrated("cpu A", "full", [FP32, BF16], time_step)  # int8 off again: all known
    assert back.chosen == BF16 and len(timed) == 6 and set(back.step_ms) == {"fp32", "bf16"}
    stored = json.loads(calibration.store_path().read_text())
    assert len(stored) == 2 and {e["cpu"] for e in stored.values()} == {"cpu A", "cpu B"}
    calibration.store_path().write_text("{not json")  # a damaged file: calibrated again, rewritten
    assert calibration.stored_or_calibrated("cpu A", "full", [FP32, BF16], time_step).chosen == BF16
    assert len(timed) == 8 and json.loads(calibration.store_path().read_text())


def _open(monkeypatch: pytest.MonkeyPatch, **config: Any) -> Any:
    from omnistudio.engine.settings import EngineConfig
    from omnistudio.voices.session import open_engine

    return open_engine(EngineConfig(model="tiny", device="cpu", **config))


def test_an_automatic_start_uses_the_calibrated_path_and_says_so(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``tiny`` calibrates when asked (OMNISTUDIO_CALIBRATE=1); here the timing is stubbed: bf16 + int8 wins."""
    from omnistudio.take.link import LocalEngine

    monkeypatch.setattr(calibration, "store_path", lambda: tmp_path / "calibration.json")
    monkeypatch.setenv("OMNISTUDIO_CALIBRATE", "1")
    monkeypatch.setenv("OMNISTUDIO_CPU_BF16", "1")
    monkeypatch.setenv("OMNISTUDIO_CPU_FLAGS", "avx2 avx512_vnni")
    timed: list[str] = []

    def fake(_load: Any, path: CpuPath, steps: int = 4) -> float:
        timed.append(path.label)
        return {"fp32": 0.04, "bf16": 0.02, "fp32 + int8": 0.03, "bf16 + int8": 0.01}[path.label]

    monkeypatch.setattr(calibration, "time_steps", fake)
    engine = _open(monkeypatch, quantize="auto")
    assert (engine.loaded.dtype_name, engine.loaded.quantize) == ("bf16", "int8") and len(timed) == 4
    info = LocalEngine(engine).info
    assert info.dtype == "bf16" and info.quantisation == "int8" and info.path.startswith("calibrated on this CPU")
    assert engine.loaded.label.endswith("· calibrated")
    pinned = _open(monkeypatch, dtype="fp32")  # a pinned dtype: int8 not allowed, one path, nothing timed
    assert (pinned.loaded.dtype_name, pinned.loaded.quantize) == ("fp32", "none") and len(timed) == 4
    assert not LocalEngine(pinned).info.path.startswith("calibrated")
    monkeypatch.setenv("OMNISTUDIO_CALIBRATE", "0")  # tiny's default: the static rule, nothing timed
    assert _open(monkeypatch, quantize="auto").loaded.quantize == "none" and len(timed) == 4


def test_a_real_calibration_times_every_candidate_of_tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No stub: each candidate is loaded and a few diffusion steps are timed; the stored choice is the fastest."""
    monkeypatch.setattr(calibration, "store_path", lambda: tmp_path / "calibration.json")
    monkeypatch.setenv("OMNISTUDIO_CALIBRATE", "1")
    monkeypatch.setenv("OMNISTUDIO_CPU_FLAGS", "avx2")
    engine = _open(monkeypatch, quantize="auto")
    (entry,) = json.loads((tmp_path / "calibration.json").read_text()).values()
    assert set(entry["step_ms"]) == {"fp32", "fp32 + int8"}
    assert all(math.isfinite(ms) and ms > 0 for ms in entry["step_ms"].values())
    fastest = min(entry["step_ms"], key=entry["step_ms"].get)
    assert CpuPath(**entry["chosen"]).label == fastest
    assert engine.loaded.quantize == entry["chosen"]["quantize"] and "tiny" == entry["model"]


def test_the_int8_kernel_is_the_fastest_measured_or_the_pinned_one() -> None:
    from omnistudio.engine.quantize import choose_int8_kernel

    timed: list[str] = []

    def stub(kernel: str) -> float:
        timed.append(kernel)
        return {"fbgemm": 0.004, "onednn": 0.002}[kernel]

    assert choose_int8_kernel(stub) == ("onednn", {"fbgemm": 0.004, "onednn": 0.002})
    assert choose_int8_kernel(stub, pinned="fbgemm") == ("fbgemm", {}) and len(timed) == 2  # pinned: not timed
    with pytest.raises(UserError, match="OMNISTUDIO_INT8_KERNEL 'avx'"):
        choose_int8_kernel(stub, pinned="avx")


@pytest.mark.parametrize("kernel", ["fbgemm", "onednn"])
def test_int8_tokens_are_the_same_run_after_run(kernel: str, monkeypatch: pytest.MonkeyPatch, ref_wav: Path) -> None:
    """One configuration (this kernel, one thread), two loads, two renders each: the same tokens."""
    import torch

    from omnistudio.engine import quantize
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.reference import Reference
    from support.audio import REF_TEXT

    monkeypatch.setenv("OMNISTUDIO_INT8_KERNEL", kernel)
    monkeypatch.setattr(quantize, "_CHOSEN_KERNEL", {})
    runs = []
    for _ in range(2):
        engine = Engine.load("tiny", device="cpu", dtype="fp32", quantize="int8")
        assert engine.loaded.quantized is not None and engine.loaded.quantized.kernel == kernel
        voice = Reference(str(ref_wav), REF_TEXT)
        for _ in range(2):
            runs.append(engine.render_tokens(["Good evening."], [voice], ["en"], num_step=4, seeds=[5]).tokens.tokens[0])
    assert all(torch.equal(runs[0], other) for other in runs[1:])
