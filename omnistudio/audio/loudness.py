"""ITU-R BS.1770-4 / EBU R128 loudness: momentary, short-term, integrated, LRA, peaks, crest factor.

The filters, gating and true-peak interpolation are libebur128's (through ``pyebur128``), which
passes the EBU Tech 3341/3342 cases; this module adds block-by-block use, peak/crest bookkeeping,
a whole-file analysis and the look-ahead true-peak limiter (:func:`limit_true_peak`).

Mono: measured as **dual-mono** by default. Our voices are mono, and broadcast plays a mono
signal on both loudspeakers of a stereo pair; BS.1770 counts each loudspeaker, so a mono signal
heard that way is as loud as the same signal as identical L/R channels. Measured as plain mono
(one channel, weight 1) it would read 3.01 LU lower. ``channel_mode`` in every report says which
was used; pass ``mono_as="mono"`` to measure a single channel instead.

Crest factor is sample peak over RMS in dB (a full-scale sine has 3.01 dB). Figures for silence
are ``-inf`` (``None`` in JSON).

Use:
    meter = LoudnessMeter(24000)            # live: feed blocks, read figures any time
    meter.add(block); meter.momentary()     # last 400 ms, LUFS
    report = measure(pcm, 24000)            # whole signal -> LoudnessReport
    report = analyze_file(path)             # a WAV/FLAC/... file
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from array import array
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pyebur128 as eb
from numpy.typing import NDArray

from omnistudio.audio.decode import decode_av
from omnistudio.checks import check_audio_file
from omnistudio.errors import UserError, first_line, shown

MONO_MODES = ("dual-mono", "mono")
READ_BLOCK_S = 10.0  # seconds a file is read in
MAX_SAMPLE = 1000.0  # +60 dBFS: a float sample beyond it is not audio (bytes read as samples), not an over
BLOCK_S = 0.1  # the step at which maxima of momentary/short-term loudness are sampled
_MODE = eb.MeasurementMode.MODE_I | eb.MeasurementMode.MODE_S
LRA_ABSOLUTE_GATE_LUFS = -70.0  # EBU Tech 3342
LRA_RELATIVE_GATE_LU = -20.0


def db(value: float) -> float:
    """20*log10 of an amplitude; -inf for 0."""
    return 20.0 * math.log10(value) if value > 0 else -math.inf


def _finite_or_none(value: float) -> float | None:
    return round(value, 3) if math.isfinite(value) else None


@dataclass(frozen=True)
class LoudnessReport:
    """Every loudness figure of one signal (LUFS, LU, dBFS, dBTP, dB)."""

    integrated_lufs: float
    loudness_range_lu: float
    momentary_max_lufs: float
    short_term_max_lufs: float
    sample_peak_dbfs: float
    true_peak_dbtp: float
    crest_factor_db: float
    rms_dbfs: float
    duration_s: float
    sample_rate: int
    channels: int
    channel_mode: str

    def as_dict(self) -> dict[str, object]:
        """JSON-friendly: floats rounded to 3 decimals, -inf as None."""
        return {k: (_finite_or_none(v) if isinstance(v, float) else v) for k, v in asdict(self).items()}


class LoudnessMeter:
    """Incremental BS.1770-4 meter: ``add`` blocks of float samples, read figures at any time.

    ``pcm`` blocks are 1-D (mono) or ``[frames, channels]``. Maxima of momentary and short-term
    loudness are sampled after every ``add`` call (feed 100 ms blocks for EBU-mode maxima).
    True peak (4x oversampling) costs about 0.1 ms per 100 ms block at 24 kHz, four times all
    the rest: a live meter that only shows M/S/I and sample peak can pass ``true_peak=False``.
    """

    def __init__(self, sample_rate: int, channels: int = 1, mono_as: str = "dual-mono",
                 true_peak: bool = True) -> None:
        if mono_as not in MONO_MODES:
            raise UserError(f"unknown mono measurement '{mono_as}': use dual-mono or mono")
        if not 8000 <= int(sample_rate) <= 384_000:
            raise UserError(f"sample rate {sample_rate} Hz is outside 8000..384000")
        if not 1 <= channels <= 8:
            raise UserError(f"{channels} channels: the meter takes 1 to 8")
        self.sample_rate = int(sample_rate)
        self.channels = int(channels)
        self.channel_mode = mono_as if channels == 1 else ("stereo" if channels == 2 else f"{channels}-channel")
        self.has_true_peak = true_peak
        mode = _MODE | eb.MeasurementMode.MODE_TRUE_PEAK if true_peak else _MODE
        self._state = eb.R128State(self.channels, self.sample_rate, mode)
        if channels == 1 and mono_as == "dual-mono":
            self._state.set_channel(0, eb.ChannelType.DUAL_MONO)
        self.frames = 0
        self._sum_sq = 0.0
        self._peak = 0.0
        self.momentary_max = -math.inf
        self.short_term_max = -math.inf
        self._momentary = self._short_term = -math.inf
        self._step = int(round(BLOCK_S * self.sample_rate))
        self._energies: deque[float] = deque(maxlen=30)
        self._short_terms = array("d")  # every short-term reading from 3 s on: the loudness range's input

    def add(self, pcm: np.ndarray) -> None:
        """Feed the next block (float; any length)."""
        block = np.asarray(pcm)
        if block.dtype != np.float32 and block.dtype != np.float64:
            block = block.astype(np.float64)
        frames = block.shape[0] if block.ndim else 0
        if (1 if block.ndim == 1 else block.shape[-1] if block.ndim == 2 else -1) != self.channels:
            raise UserError(f"block of shape {np.shape(pcm)} does not match a {self.channels}-channel meter")
        if frames == 0:
            return
        flat = np.ascontiguousarray(block).ravel()
        self._state.add_frames(flat, frames)
        self.frames += frames
        self._sum_sq += float(np.dot(flat, flat))
        self._peak = max(self._peak, float(max(flat.max(), -flat.min())))
        # libebur128 sums the whole 3 s window on every short-term read (~40 us at 24 kHz). With
        # 100 ms blocks, short-term is the mean of the last 30 block energies: keep those instead.
        self._momentary = eb.get_loudness_momentary(self._state)
        if frames == self._step:
            self._energies.append(10.0 ** ((eb.get_loudness_window(self._state, 100) + 0.691) / 10.0))
        else:
            self._energies.clear()
        if len(self._energies) == 30 and self.frames >= 3 * self.sample_rate:
            energy = sum(self._energies) / 30.0
            self._short_term = -0.691 + 10.0 * math.log10(energy) if energy > 0 else -math.inf
        else:
            self._short_term = eb.get_loudness_shortterm(self._state)
        if self.frames >= 0.4 * self.sample_rate:
            self.momentary_max = max(self.momentary_max, self._momentary)
        if self.frames >= 3.0 * self.sample_rate:
            self.short_term_max = max(self.short_term_max, self._short_term)
            self._short_terms.append(self._short_term)

    def momentary(self) -> float:
        """Loudness of the last 400 ms (as of the last ``add``), LUFS."""
        return self._momentary

    def short_term(self) -> float:
        """Loudness of the last 3 s (as of the last ``add``), LUFS."""
        return self._short_term

    def integrated(self) -> float:
        """Gated programme loudness of everything fed so far, LUFS."""
        return float(eb.get_loudness_global(self._state))

    def loudness_range(self) -> float:
        """EBU Tech 3342 (v3) loudness range, LU: the short-term loudness read after every ``add`` once 3 s
        are in (10 Hz with 100 ms blocks, as Tech 3342 asks and FFmpeg's ``ebur128`` does; libebur128's own
        LRA reads it once a second, 0.5-0.7 LU under both on speech), gated at -70 LUFS and 20 LU under the
        gated mean, from the 10th to the 95th percentile by Tech 3342's rank rule (libebur128's; FFmpeg's
        lower rank is one under it, which moves a short programme's figure by up to a few tenths)."""
        return loudness_range(np.frombuffer(self._short_terms, dtype=np.float64))

    def sample_peak(self) -> float:
        """Highest absolute sample, dBFS."""
        return db(self._peak)

    def true_peak(self) -> float:
        """Highest 4x-oversampled peak over all channels, dBTP (NaN if the meter was made without)."""
        if not self.has_true_peak:
            return math.nan
        return db(max(eb.get_true_peak(self._state, c) for c in range(self.channels)))

    def last_true_peak(self) -> float:
        """The true peak of the block the last ``add`` fed, dBTP (NaN if the meter was made without)."""
        if not self.has_true_peak:
            return math.nan
        return db(max(eb.get_previous_true_peak(self._state, c) for c in range(self.channels)))

    def rms(self) -> float:
        """RMS over all samples and channels, dBFS (full-scale square wave = 0 dB)."""
        count = self.frames * self.channels
        return db(math.sqrt(self._sum_sq / count)) if count else -math.inf

    def report(self) -> LoudnessReport:
        """Every figure for what has been fed so far."""
        peak, rms = self.sample_peak(), self.rms()
        crest = peak - rms if math.isfinite(peak) and math.isfinite(rms) else -math.inf
        return LoudnessReport(
            integrated_lufs=self.integrated(), loudness_range_lu=self.loudness_range(),
            momentary_max_lufs=self.momentary_max, short_term_max_lufs=self.short_term_max,
            sample_peak_dbfs=peak, true_peak_dbtp=self.true_peak(), crest_factor_db=crest,
            rms_dbfs=rms, duration_s=self.frames / self.sample_rate, sample_rate=self.sample_rate,
            channels=self.channels, channel_mode=self.channel_mode)


def loudness_range(short_terms: np.ndarray) -> float:
    """EBU Tech 3342's loudness range of short-term loudness readings (LUFS), LU; 0 with none above the gates."""
    values = short_terms[short_terms > LRA_ABSOLUTE_GATE_LUFS]
    if values.size == 0:
        return 0.0
    mean = 10.0 * math.log10(float(np.mean(10.0 ** (values / 10.0))))
    values = np.sort(values[values >= mean + LRA_RELATIVE_GATE_LU])
    last = values.size - 1
    return float(values[int(last * 0.95 + 0.5)] - values[int(last * 0.10 + 0.5)])


def measure(pcm: np.ndarray, sample_rate: int, mono_as: str = "dual-mono") -> LoudnessReport:
    """Measure a whole signal (fed in 100 ms blocks so that the M/S maxima are EBU-mode maxima)."""
    data = np.asarray(pcm)
    channels = 1 if data.ndim == 1 else data.shape[1]
    meter = LoudnessMeter(sample_rate, channels, mono_as)
    step = max(1, int(round(BLOCK_S * sample_rate)))
    for start in range(0, data.shape[0], step):
        meter.add(data[start:start + step])
    return meter.report()


@dataclass(frozen=True)
class AudioSource:
    """An audio file open for reading: its rate, channels and length, and its samples block by block (float32,
    [frames] or [frames, channels]; each block checked as it is read)."""

    sample_rate: int
    channels: int
    frames: int
    blocks: Iterator[np.ndarray]
    warnings: tuple[str, ...] = ()  # what the decoder said of the file (a damaged tag), one line each


@contextmanager
def open_audio(path: Path, block_s: float | None = None) -> Iterator[AudioSource]:
    """``path`` as an :class:`AudioSource` (libsndfile reads WAV, FLAC, MP3, OGG in blocks; FFmpeg decodes
    M4A/AAC whole); UserError, one line, for what is not an audio file, holds no frames, or holds samples
    that are not audio (NaN, infinite, beyond +60 dBFS: bytes read as samples)."""
    # lazy: start-up (soundfile)
    import soundfile as sf

    path = check_audio_file(Path(path))
    if path.stat().st_size == 0:
        raise UserError(f"{path} is empty")
    try:
        with _decoder_lines() as said:  # libmpg123 prints a damaged ID3 tag to the process's stderr
            handle = sf.SoundFile(str(path))
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        try:  # M4A/AAC and the rest FFmpeg reads
            data, rate = decode_av(path)
        except ValueError:
            raise UserError(f"{path} is not a readable audio file ({first_line(exc)})") from None
        yield _source(path, int(rate), 1 if data.ndim == 1 else data.shape[1], data.shape[0], iter([data]))
        return
    with handle:
        step = max(1, int((block_s or READ_BLOCK_S) * handle.samplerate))
        blocks = handle.blocks(step, dtype="float32", always_2d=False)
        source = _source(path, int(handle.samplerate), int(handle.channels), int(handle.frames), blocks)
        yield replace(source, warnings=tuple(f"the decoder says: {first_line_of(line)}" for line in said))


@contextmanager
def _decoder_lines() -> Iterator[list[str]]:
    """What a C decoder writes to file descriptor 2 during the block (kept, not shown: the caller says it
    as a warning of its own); the process's stderr is restored after."""

    lines: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            lines.extend(line for line in caught.read(4096).decode("utf-8", "replace").splitlines() if line.strip())


def first_line_of(text: str) -> str:
    """A decoder's line without its source location (``[src/libmpg123/id3.c:...] error: Whoa! ...``)."""
    return shown(text.split("] ", 1)[-1].removeprefix("error: ").removeprefix("Whoa! ").strip())


def _source(path: Path, rate: int, channels: int, frames: int, blocks: Iterator[np.ndarray]) -> AudioSource:
    if frames <= 0:
        raise UserError(f"{path} holds no audio frames")
    return AudioSource(rate, channels, frames, _checked(path, rate, blocks))


def _checked(path: Path, rate: int, blocks: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    """The blocks; at the first that holds samples that are not audio (NaN, infinite, beyond +60 dBFS), the
    rest is counted and the file refused in one line saying how many and where the first is."""
    at = 0
    for block in blocks:
        bad = ~np.isfinite(block) | (np.abs(block) > MAX_SAMPLE)  # one pass over a good block
        if bad.any():
            first = at + int(np.argmax(bad.reshape(block.shape[0], -1).any(axis=1)))
            not_finite, too_loud = _bad_counts(block)
            for rest in blocks:
                more = _bad_counts(rest)
                not_finite, too_loud = not_finite + more[0], too_loud + more[1]
            what = " and ".join(part for part in (
                f"{not_finite} NaN or infinite" if not_finite else "",
                f"{too_loud} impossible (beyond {db(MAX_SAMPLE):.0f} dBFS: bytes read as audio)" if too_loud else "")
                if part)
            raise UserError(f"{path} has {what} samples (the first at {first / rate:.3f} s): it is damaged and "
                            "cannot be measured")
        at += block.shape[0]
        yield block


def _bad_counts(block: np.ndarray) -> tuple[int, int]:
    finite = np.isfinite(block)
    return int((~finite).sum()), int((np.abs(block[finite]) > MAX_SAMPLE).sum())


def read_audio(path: Path) -> tuple[np.ndarray, int]:
    """Read an audio file whole as float32 ([frames] or [frames, channels]); UserError if it is not one (see
    :func:`open_audio`, which reads it block by block)."""
    with open_audio(path) as source:
        data = np.concatenate(list(source.blocks))
    return data, source.sample_rate


def analyze_file(path: Path, mono_as: str = "dual-mono") -> LoudnessReport:
    """Every loudness figure of an audio file."""
    data, rate = read_audio(path)
    return measure(data, rate, mono_as)


def limit_true_peak(pcm: np.ndarray, sample_rate: int, ceiling_db: float, window_ms: float = 5.0) -> np.ndarray:
    """Look-ahead peak limiter on the 4x-oversampled envelope: the gain is a smoothed running
    minimum of ceiling/peak, never above what any sample within the window needs (the finishing's
    limiter, and the monitor's)."""
    # lazy: start-up (scipy)
    from scipy.ndimage import minimum_filter1d  # here: scipy's modules take ~0.3 s to import, and only a
    from scipy.signal import resample_poly  # take that reaches its ceiling needs them

    x = np.asarray(pcm, dtype=np.float64)
    env: NDArray[np.float64] = np.abs(resample_poly(x, 4, 1)).reshape(-1, 4).max(axis=1)
    need = np.minimum(1.0, 10 ** (ceiling_db / 20) / np.maximum(env, 1e-12))
    half = max(1, int(window_ms * sample_rate / 1000))
    gain: NDArray[np.float64] = minimum_filter1d(need, size=2 * half + 1, mode="nearest")
    weights = np.hanning(2 * half + 3)[1:-1]
    gain = np.convolve(np.pad(gain, half, mode="edge"), weights / weights.sum(), mode="valid")
    return x * np.minimum(gain, need)
