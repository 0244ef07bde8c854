"""Finishing DSP for speech: room tone, breaths, zero-crossing seams, crossfades, and a streaming
``Stitcher`` that joins sentence chunks into finished audio.

- Room tone: pink comfort noise from Paul Kellet's refined filter (within about 0.3 dB of
  -3.01 dB/octave), streamed with filter state, at -52 dBFS RMS (full-scale square = 0 dB).
- Breaths: band-passed noise (350-3500 Hz) with a quick raised-cosine attack and a slower decay,
  only in pauses longer than 280 ms, ending shortly before the next sentence.
- Seams: each sentence's start and end are snapped to the nearest zero crossing (at most 1.5 ms
  away) and given a 5-10 ms smooth equal-power fade; a pause shorter than the fade becomes a
  direct crossfade of the two sentences.

Every step is optional (``Stitcher(room_tone=..., breaths=..., align_seams=..., crossfade_ms=0)``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol, TypedDict

import numpy as np
from numpy.typing import NDArray
from scipy.signal import butter, lfilter, sosfilt

from omnistudio.errors import UserError

ROOM_TONE_DB = -52.0
BREATH_MIN_PAUSE_S = 0.28
SEAM_MAX_SHIFT_S = 0.0015
CROSSFADE_MS = 8.0

# Paul Kellet's refined pink filter: six leaky integrators + a one-sample delayed tap, summed.
_KELLET_POLES = (0.99886, 0.99332, 0.96900, 0.86650, 0.55000, -0.7616)
_KELLET_GAINS = (0.0555179, 0.0750759, 0.1538520, 0.3104856, 0.5329522, -0.0168980)
_KELLET_DIRECT, _KELLET_DELAYED = 0.5362, 0.115926


def _kellet_rms_gain() -> float:
    """RMS of the filter's output for unit-variance white input (energy of its impulse response)."""
    impulse = np.zeros(1 << 16)
    impulse[0] = 1.0
    h = sum(lfilter([g], [1.0, -p], impulse) for p, g in zip(_KELLET_POLES, _KELLET_GAINS))
    h[0] += _KELLET_DIRECT
    h[1] += _KELLET_DELAYED
    return float(np.sqrt(np.sum(h * h)))


class PinkNoise:
    """Streaming pink noise at ``level_db`` dBFS RMS: successive ``generate`` calls are seamless."""

    def __init__(self, level_db: float = ROOM_TONE_DB, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)
        self._gain = 10 ** (level_db / 20) / _kellet_rms_gain()
        self._zi = [np.zeros(1) for _ in _KELLET_POLES]
        self._last_white = 0.0

    def generate(self, frames: int) -> np.ndarray:
        white = self._rng.standard_normal(frames)
        if frames == 0:
            return np.zeros(0, dtype=np.float32)
        out = _KELLET_DIRECT * white
        out[0] += _KELLET_DELAYED * self._last_white
        out[1:] += _KELLET_DELAYED * white[:-1]
        for i, (pole, gain) in enumerate(zip(_KELLET_POLES, _KELLET_GAINS)):
            y, self._zi[i] = lfilter([gain], [1.0, -pole], white, zi=self._zi[i])
            out += y
        self._last_white = float(white[-1])
        return (out * self._gain).astype(np.float32)


def synth_breath(seconds: float, sample_rate: int, level_db: float = -42.0,
                 rng: np.random.Generator | None = None) -> np.ndarray:
    """One inhalation: band-passed noise, raised-cosine attack (35%), smooth decay, peak RMS ``level_db``."""
    rng = rng or np.random.default_rng(0)
    n = max(1, int(seconds * sample_rate))
    sos = butter(2, [350.0, min(3500.0, 0.45 * sample_rate)], btype="bandpass", fs=sample_rate, output="sos")
    noise: NDArray[np.float64] = sosfilt(sos, rng.standard_normal(n + 256))[256:]
    noise /= max(float(np.sqrt(np.mean(noise * noise))), 1e-12)
    attack = max(1, int(0.35 * n))
    env = np.empty(n)
    env[:attack] = 0.5 - 0.5 * np.cos(np.pi * np.arange(attack) / attack)
    decay = n - attack
    env[attack:] = (0.5 + 0.5 * np.cos(np.pi * np.arange(decay) / max(decay, 1))) ** 1.5
    return (noise * env * 10 ** (level_db / 20)).astype(np.float32)


def zero_crossing_near(x: np.ndarray, index: int, max_shift: int) -> int:
    """The sample boundary nearest ``index`` (within ``max_shift``) where ``x`` changes sign, or ``index``.

    A boundary ``i`` is a crossing when ``x[i-1]`` and ``x[i]`` differ in sign (or one is zero).
    """
    lo, hi = max(1, index - max_shift), min(len(x) - 1, index + max_shift)
    if hi < lo:
        return index
    seg = x[lo - 1:hi + 1]
    crossings = np.nonzero(seg[:-1] * seg[1:] <= 0)[0] + lo
    if crossings.size == 0:
        return index
    return int(crossings[np.argmin(np.abs(crossings - index))])


def fade_curves(frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Smooth equal-power (fade_in, fade_out): sin/cos of a raised-cosine ramp; in^2 + out^2 = 1."""
    t = (np.arange(frames) + 0.5) / max(frames, 1)
    ramp = 0.5 - 0.5 * np.cos(np.pi * t)
    return np.sin(0.5 * np.pi * ramp), np.cos(0.5 * np.pi * ramp)


class SpanDict(TypedDict):
    """A :class:`SentenceSpan` as a sidecar's ``sentences`` entry holds it."""

    index: int
    id: int | None
    start_s: float
    end_s: float
    breath_after: bool


@dataclass(frozen=True)
class SentenceSpan:
    """Where one sentence landed in the finished audio."""

    index: int
    start_s: float
    end_s: float
    sentence_id: int | None = None  # the sentence's id (an int: its index in its script), or None
    breath_after: bool = False

    def as_dict(self) -> SpanDict:
        return {"index": self.index, "id": self.sentence_id, "start_s": round(self.start_s, 4),
                "end_s": round(self.end_s, 4), "breath_after": self.breath_after}


@dataclass
class Stitcher:
    """Join sentence chunks (mono float32) into finished audio, incrementally.

    ``push(pcm, pause_s)`` takes one sentence and the pause after it, and returns the audio that
    is final now (a pause shorter than the crossfade keeps the sentence's tail until the next push
    or ``finish``). ``spans`` lists each sentence's start/end in the output. ``stitch`` does it all
    at once.
    """

    sample_rate: int = 24_000
    room_tone: bool = True
    breaths: bool = True
    align_seams: bool = True
    crossfade_ms: float = CROSSFADE_MS
    room_tone_db: float = ROOM_TONE_DB
    breath_db: float = -42.0
    seed: int = 0
    spans: list[SentenceSpan] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.crossfade_ms and not 5.0 <= self.crossfade_ms <= 10.0:
            raise UserError(f"crossfade {self.crossfade_ms} ms is outside 5..10 ms (or 0 for none)")
        self._fade = int(round(self.crossfade_ms * self.sample_rate / 1000))
        self._shift = int(round(SEAM_MAX_SHIFT_S * self.sample_rate))
        self._noise = PinkNoise(self.room_tone_db, self.seed) if self.room_tone else None
        self._rng = np.random.default_rng(self.seed + 1)
        self._held: np.ndarray | None = None  # tail awaiting a crossfade with the next sentence
        self._pos = 0  # frames emitted so far

    def push(self, pcm: np.ndarray, pause_s: float = 0.0, sentence_id: int | None = None,
             breathe: bool = True) -> np.ndarray:
        """``breathe`` False: the pause stays silence (a script's ``[pause]``), whatever its length."""
        x = np.asarray(pcm, dtype=np.float32).ravel()
        if not np.all(np.isfinite(x)):
            raise UserError(f"sentence {len(self.spans)} has NaN or infinite samples")
        if not (isinstance(pause_s, (int, float)) and math.isfinite(pause_s) and pause_s >= 0):
            raise UserError(f"pause {pause_s!r} after sentence {len(self.spans)} must be a number >= 0 s")
        if self.align_seams and x.size > 4 * self._shift:
            x = x[zero_crossing_near(x, 0, self._shift):zero_crossing_near(x, x.size, self._shift)]
        fade = min(self._fade, x.size // 2)
        parts: list[np.ndarray] = []
        held, self._held = self._held, None
        if held is not None and fade and held.size:  # a short pause: crossfade the two sentences
            n = min(fade, held.size)
            fade_in, fade_out = fade_curves(n)
            parts.append(held[:held.size - n])
            start = self._pos + held.size - n
            parts.append(x[:n] * fade_in + held[held.size - n:] * fade_out)
        else:
            if held is not None:
                parts.append(held * fade_curves(held.size)[1])
            start = self._pos + sum(p.size for p in parts)
            n = fade
            parts.append(x[:n] * fade_curves(n)[0])
        parts.append(x[n:max(n, x.size - fade)].astype(np.float64))
        end = start + x.size
        pause = int(round(pause_s * self.sample_rate))
        tail = x[max(n, x.size - fade):].astype(np.float64)
        breath = False
        if pause >= fade:
            parts.append(tail * fade_curves(tail.size)[1])
            gap = np.zeros(pause)
            if self.breaths and breathe and pause_s > BREATH_MIN_PAUSE_S:
                gap += self._breath_for(pause)
                breath = True
            parts.append(gap)
        else:
            self._held = tail  # crossfaded (or faded out) when the next sentence or finish comes
        self.spans.append(SentenceSpan(len(self.spans), start / self.sample_rate, end / self.sample_rate,
                                       sentence_id, breath))
        return self._emit(parts)

    def _breath_for(self, pause: int) -> np.ndarray:
        """A breath placed in a pause of ``pause`` frames, ending 15% before the next sentence."""
        gap = np.zeros(pause)
        length = int(min(0.45 * self.sample_rate, 0.6 * pause))
        end = pause - int(0.15 * pause)
        gap[end - length:end] = synth_breath(length / self.sample_rate, self.sample_rate, self.breath_db,
                                             self._rng)[:length]
        return gap

    def pause_after_last(self, piece: np.ndarray) -> int:
        """Where in ``piece`` (the last push's output) the last sentence ended: what follows is its pause."""
        if not self.spans:
            return len(piece)
        end = int(round(self.spans[-1].end_s * self.sample_rate))
        return min(len(piece), max(0, end - (self._pos - len(piece))))

    def finish(self) -> np.ndarray:
        """Flush the last held tail (faded out)."""
        if self._held is None:
            return np.zeros(0, dtype=np.float32)
        held, self._held = self._held, None
        return self._emit([held * fade_curves(held.size)[1]])

    def _emit(self, parts: list[np.ndarray]) -> np.ndarray:
        out = np.concatenate(parts) if parts else np.zeros(0)
        if self._noise is not None:
            out = out + self._noise.generate(out.size)
        self._pos += out.size
        return out.astype(np.float32)

    def stitch(self, chunks: Iterable[SentenceChunk]) -> np.ndarray:
        """Join ``(pcm, pause_s)`` pairs (or objects with ``.pcm``/``.pause_s``) in one go."""
        pieces = [self.push(*chunk_fields(c)) for c in chunks]
        pieces.append(self.finish())
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)


class PcmChunk(Protocol):
    """A rendered sentence as an object: its ``pcm`` (and, when it has them, ``pause_s``, ``sentence_id``
    and ``breath``)."""

    @property
    def pcm(self) -> np.ndarray: ...


# A sentence to stitch: ``(pcm, pause_s)``, ``(pcm, pause_s, sentence_id)``, ``(pcm, pause_s, sentence_id,
# breath)`` or an object with ``.pcm``.
SentenceChunk = (tuple[np.ndarray, float] | tuple[np.ndarray, float, int | None]
                 | tuple[np.ndarray, float, int | None, bool] | PcmChunk)


def chunk_fields(chunk: SentenceChunk) -> tuple[np.ndarray, float, int | None, bool]:
    """``(pcm, pause_s, sentence_id, breath)`` of a chunk tuple (2 to 4 fields) or object."""
    if isinstance(chunk, tuple):
        return (chunk[0], chunk[1], chunk[2] if len(chunk) > 2 else None, bool(chunk[3]) if len(chunk) > 3 else True)
    return (chunk.pcm, float(getattr(chunk, "pause_s", 0.0)), getattr(chunk, "sentence_id", None),
            bool(getattr(chunk, "breath", True)))
