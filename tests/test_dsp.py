"""Room tone is pink and at -52 dBFS; seams do not click; breaths only in pauses over 280 ms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import butter, sosfilt, welch

from omnistudio.audio.dsp import PinkNoise, Stitcher, fade_curves, zero_crossing_near
from omnistudio.errors import UserError

SR = 24_000


def voiced(seconds: float, f0: float = 140.0, sr: int = SR, amp: float = 0.3) -> np.ndarray:
    """A vowel-like harmonic signal at full level right up to both ends (a worst case for seams)."""
    t = np.arange(int(seconds * sr)) / sr
    phase = 2 * np.pi * f0 * t + 0.3
    return (amp * sum(np.sin(k * phase) / k for k in range(1, 8))).astype(np.float32)


def octave_slope(x: np.ndarray, sr: int) -> tuple[float, float]:
    """Fitted dB/octave of octave-band power density over 50 Hz - 10 kHz, and the worst band's misfit."""
    f, psd = welch(x, sr, nperseg=1 << 15)
    centers = 62.5 * 2.0 ** np.arange(8)  # 62.5 Hz .. 8 kHz; edges 44 Hz .. 11.3 kHz
    levels = np.array([10 * np.log10(psd[(f >= c / 2 ** 0.5) & (f < c * 2 ** 0.5)].mean()) for c in centers])
    octaves = np.log2(centers)
    slope, intercept = np.polyfit(octaves, levels, 1)
    return float(slope), float(np.max(np.abs(levels - (slope * octaves + intercept))))


@pytest.mark.parametrize("sr", [24_000, 48_000])
def test_room_tone_is_pink_at_minus_52(sr: int) -> None:
    noise = PinkNoise(-52.0, seed=3).generate(40 * sr)
    slope, misfit = octave_slope(noise.astype(np.float64), sr)
    assert slope == pytest.approx(-3.01, abs=0.5)
    assert misfit < 1.0
    rms_db = 20 * np.log10(np.sqrt(np.mean(noise.astype(np.float64) ** 2)))
    assert rms_db == pytest.approx(-52.0, abs=1.0)


def test_one_pole_lowpass_is_not_pink() -> None:
    """The measurement can fail: the seed's 0.05/(1-0.95 z^-1) filter is about -5 dB/octave."""
    from scipy.signal import lfilter

    x = lfilter([0.05], [1, -0.95], np.random.default_rng(0).standard_normal(40 * SR))
    slope, _ = octave_slope(x, SR)
    assert abs(slope + 3.01) > 0.5


def test_room_tone_streams_seamlessly() -> None:
    whole = PinkNoise(seed=7).generate(30_000)
    gen = PinkNoise(seed=7)
    pieces = np.concatenate([gen.generate(n) for n in (1, 999, 12_000, 17_000)])
    np.testing.assert_allclose(pieces, whole, rtol=0, atol=1e-7)


def high_band_db(x: np.ndarray, lo: int, hi: int) -> float:
    sos = butter(4, 4000, btype="highpass", fs=SR, output="sos")
    y = sosfilt(sos, x.astype(np.float64))[lo:hi]
    return 10 * np.log10(np.mean(y * y) + 1e-30)


def seam_excess_db(x: np.ndarray, seam: int) -> float:
    """High-band energy around a seam minus that of the louder side (both sides 20-50 ms away)."""
    ms = SR // 1000
    around = high_band_db(x, seam - 10 * ms, seam + 10 * ms)
    left = high_band_db(x, seam - 50 * ms, seam - 20 * ms)
    right = high_band_db(x, seam + 20 * ms, seam + 50 * ms)
    return around - max(left, right)


@pytest.mark.parametrize("pause", [0.0, 0.2, 0.5])
def test_seams_do_not_click(pause: float) -> None:
    a, b = voiced(1.0013, 140.0), voiced(0.8, 190.0)
    stitcher = Stitcher(SR, breaths=False)
    out = stitcher.stitch([(a, pause), (b, 0.3)])
    seams = [int(stitcher.spans[0].end_s * SR), int(stitcher.spans[1].start_s * SR)]
    for seam in seams:
        assert seam_excess_db(out, seam) <= 3.0


def test_a_hard_cut_would_fail_the_seam_check() -> None:
    a, b = voiced(1.0013, 140.0), voiced(0.8, 190.0)
    hard = np.concatenate([a, b]) + PinkNoise(seed=0).generate(a.size + b.size)
    assert seam_excess_db(hard, a.size) > 10.0


def test_seams_snap_to_zero_crossings_within_1_5_ms() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal(5000)
    for index in (0, 100, 2500, 5000):
        j = zero_crossing_near(x, index, 36)
        assert abs(j - index) <= 36
        assert x[j - 1] * x[j] <= 0
    v = voiced(0.6)
    crossings = np.nonzero(v[:-1] * v[1:] <= 0)[0] + 1
    first = crossings[crossings > 100][0]
    last = crossings[crossings < v.size - 100][-1]
    a = v[first - 20:last + 25]  # a crossing 20 samples in and 25 samples before the end
    assert abs(a[0]) > 0.2 and abs(a[-1]) > 0.2
    stitcher = Stitcher(SR, room_tone=False, breaths=False, crossfade_ms=0)
    out = stitcher.stitch([(a, 0.1)])
    span = stitcher.spans[0]
    assert round((span.end_s - span.start_s) * SR) == a.size - 45  # both ends moved to the crossings
    first, last = out[0], out[int(round(span.end_s * SR)) - 1]
    step = float(np.max(np.abs(np.diff(v))))  # one sample's largest move: 0.08 here, vs 0.3 uncut
    assert abs(first) <= step and abs(last) <= step  # cut where the wave crosses zero


def test_fade_curves_are_smooth_and_equal_power() -> None:
    fade_in, fade_out = fade_curves(192)
    np.testing.assert_allclose(fade_in ** 2 + fade_out ** 2, 1.0, atol=1e-12)
    assert fade_in[0] < 1e-3 and fade_out[-1] < 1e-3 and np.all(np.diff(fade_in) > 0)


def test_breaths_only_in_pauses_over_280_ms() -> None:
    pauses = [0.1, 0.25, 0.279, 0.29, 0.6, 0.0]
    chunks = [(voiced(0.4), p) for p in pauses]
    stitcher = Stitcher(SR, room_tone=False, breaths=True)
    out = stitcher.stitch(chunks)
    spans = stitcher.spans
    for i, pause in enumerate(pauses[:-1]):
        gap = out[int(spans[i].end_s * SR) + 10:int(spans[i + 1].start_s * SR) - 10]
        has_sound = gap.size > 0 and float(np.max(np.abs(gap))) > 1e-4
        assert has_sound == (pause > 0.28), (pause, gap.size)
        assert spans[i].breath_after == (pause > 0.28)


def test_streaming_push_equals_stitch_and_times_add_up() -> None:
    chunks = [(voiced(0.5), 0.3), (voiced(0.7, 180), 0.004), (voiced(0.6, 120), 0.5), (voiced(0.3), 0.0)]
    whole = Stitcher(SR, seed=1).stitch(chunks)
    live = Stitcher(SR, seed=1)
    pieces = [live.push(pcm, pause) for pcm, pause in chunks]
    assert all(p.size > 0 for p in pieces)  # audio comes out as each sentence arrives
    np.testing.assert_allclose(np.concatenate([*pieces, live.finish()]), whole, atol=1e-7)
    starts = [s.start_s for s in live.spans]
    assert starts == sorted(starts)
    # pause after sentence 0 is kept; the 4 ms one (shorter than the crossfade) becomes an overlap
    assert live.spans[1].start_s - live.spans[0].end_s == pytest.approx(0.3, abs=0.002)
    assert live.spans[2].start_s < live.spans[1].end_s
    assert whole.size == pytest.approx(int(live.spans[-1].end_s * SR), abs=2)


def test_bad_inputs() -> None:
    with pytest.raises(UserError, match="crossfade"):
        Stitcher(SR, crossfade_ms=30)
    with pytest.raises(UserError, match="NaN"):
        Stitcher(SR).push(np.array([0.0, np.nan], dtype=np.float32))
    with pytest.raises(UserError, match="pause"):
        Stitcher(SR).push(voiced(0.2), -1.0)
