"""BS.1770-4 meter against EBU Tech 3341 / 3342 cases, synthesised here at 48 kHz and 24 kHz.

The EBU cases are stereo with identical channels; a mono signal measured as dual-mono (our
default) is exactly that, so the expected values carry over unchanged.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from omnistudio.audio.loudness import LoudnessMeter, analyze_file, measure
from omnistudio.errors import UserError

RATES = [48_000, 24_000]


def tone(segments: list[tuple[float, float]], sr: int, freq: float = 1000.0, phase_deg: float = 0.0) -> np.ndarray:
    """Concatenated sine segments (dBFS peak, seconds), phase-continuous."""
    levels = np.concatenate([np.full(int(round(sec * sr)), 10 ** (dbfs / 20)) for dbfs, sec in segments])
    t = np.arange(levels.size) / sr
    return levels * np.sin(2 * np.pi * freq * t + math.radians(phase_deg))


@pytest.mark.parametrize("sr", RATES)
@pytest.mark.parametrize("case,segments", [
    (1, [(-23, 20)]),
    (2, [(-33, 20)]),
    (3, [(-36, 10), (-23, 60), (-36, 10)]),
    (4, [(-72, 10), (-36, 10), (-23, 60), (-36, 10), (-72, 10)]),
    (5, [(-26, 20), (-20, 20.1), (-26, 20)]),
])
def test_tech3341_integrated(sr: int, case: int, segments: list[tuple[float, float]]) -> None:
    expected = -33.0 if case == 2 else -23.0
    assert measure(tone(segments, sr), sr).integrated_lufs == pytest.approx(expected, abs=0.1)


def _readings(signal: np.ndarray, sr: int) -> tuple[list[float], list[float]]:
    meter, step = LoudnessMeter(sr), sr // 10
    momentary, short = [], []
    for start in range(0, signal.size, step):
        meter.add(signal[start:start + step])
        momentary.append(meter.momentary())
        short.append(meter.short_term())
    return momentary, short


@pytest.mark.parametrize("sr", RATES)
def test_tech3341_case9_short_term(sr: int) -> None:
    signal = tone([(-20, 1.34), (-30, 1.66)] * 5, sr)
    _, short = _readings(signal, sr)
    after_3s = np.array(short[30:])
    assert after_3s.size >= 100
    assert np.all(np.abs(after_3s + 23.0) <= 0.1), (after_3s.min(), after_3s.max())


def test_short_term_fast_path_matches_library() -> None:
    sr = 24_000
    signal = tone([(-20, 1.66), (-31, 0.9), (-45, 2.0)] * 3, sr)
    fast, slow = LoudnessMeter(sr), LoudnessMeter(sr)  # 100 ms blocks vs 50 ms blocks (library)
    for start in range(0, signal.size, 2400):
        fast.add(signal[start:start + 2400])
        slow.add(signal[start:start + 1200])
        slow.add(signal[start + 1200:start + 2400])
        if start >= 3 * sr:
            assert fast.short_term() == pytest.approx(slow.short_term(), abs=1e-6)
    assert fast.short_term_max == pytest.approx(slow.short_term_max, abs=1e-6)


@pytest.mark.parametrize("sr", RATES)
def test_tech3341_case12_momentary(sr: int) -> None:
    signal = tone([(-20, 0.18), (-30, 0.22)] * 25, sr)
    momentary, _ = _readings(signal, sr)
    after = np.array(momentary[4:])
    assert np.all(np.abs(after + 23.0) <= 0.1), (after.min(), after.max())


@pytest.mark.parametrize("sr", RATES)
@pytest.mark.parametrize("segments,expected", [
    ([(-20, 20), (-30, 20)], 10.0),  # Tech 3342 case 1
    ([(-20, 20), (-15, 20)], 5.0),   # Tech 3342 case 2
])
def test_tech3342_lra(sr: int, segments: list[tuple[float, float]], expected: float) -> None:
    assert measure(tone(segments, sr), sr).loudness_range_lu == pytest.approx(expected, abs=1.0)


@pytest.mark.parametrize("sr", RATES)
@pytest.mark.parametrize("divisor,phase", [(4, 0.0), (4, 45.0), (8, 67.5)])  # Tech 3341 cases 15, 16, 18
def test_true_peak(sr: int, divisor: int, phase: float) -> None:
    signal = tone([(-6, 1.0)], sr, freq=sr / divisor, phase_deg=phase)
    # A 50 ms fade-in: a sine switched on mid-cycle is a step, and the step's band-limited
    # overshoot is a real inter-sample peak (up to +0.65 dB here) that the steady tone lacks.
    signal *= np.minimum(1.0, np.arange(signal.size) / (0.05 * sr))
    report = measure(signal, sr)
    assert -6.4 <= report.true_peak_dbtp <= -5.8
    if phase == 45.0:  # the samples miss the peak by 3 dB; true peak must not
        assert report.sample_peak_dbfs == pytest.approx(-9.03, abs=0.05)


def test_dual_mono_reads_3db_above_mono_and_equals_stereo() -> None:
    sr = 24_000
    x = tone([(-23, 5)], sr)
    dual, mono = measure(x, sr), measure(x, sr, mono_as="mono")
    stereo = measure(np.stack([x, x], axis=1), sr)
    assert dual.channel_mode == "dual-mono" and mono.channel_mode == "mono"
    assert dual.integrated_lufs - mono.integrated_lufs == pytest.approx(3.01, abs=0.02)
    assert dual.integrated_lufs == pytest.approx(stereo.integrated_lufs, abs=1e-6)


def test_crest_factor_and_peaks_of_a_sine() -> None:
    sr = 48_000
    report = measure(tone([(-10, 2)], sr, freq=997.0), sr)
    assert report.crest_factor_db == pytest.approx(3.01, abs=0.02)
    assert report.sample_peak_dbfs == pytest.approx(-10.0, abs=0.01)
    assert report.as_dict()["integrated_lufs"] == pytest.approx(-10.0, abs=0.1)


def test_silence_reports_none_in_json() -> None:
    d = measure(np.zeros(24_000, dtype=np.float32), 24_000).as_dict()
    assert d["integrated_lufs"] is None and d["true_peak_dbtp"] is None


def test_block_size_does_not_change_integrated() -> None:
    sr = 24_000
    x = tone([(-30, 3), (-18, 4)], sr)
    meter = LoudnessMeter(sr)
    rng = np.random.default_rng(1)
    pos = 0
    while pos < x.size:
        n = int(rng.integers(1, 5000))
        meter.add(x[pos:pos + n])
        pos += n
    assert meter.integrated() == pytest.approx(measure(x, sr).integrated_lufs, abs=1e-6)


def test_bad_inputs(tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(UserError, match="mono"):
        LoudnessMeter(24_000, mono_as="quad")
    with pytest.raises(UserError, match="does not match"):
        LoudnessMeter(24_000).add(np.zeros((10, 2)))
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    with pytest.raises(UserError, match="empty"):
        analyze_file(empty)
    junk = tmp_path / "notes.wav"
    junk.write_text("this is not audio\n" * 20)
    with pytest.raises(UserError, match="not a readable audio file"):
        analyze_file(junk)
    with pytest.raises(UserError, match="no such file"):
        analyze_file(tmp_path / "missing.wav")
