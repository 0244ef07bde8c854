"""Whether a file meets a loudness rule, and the figures that show it: the programme's, a curve of its
momentary and short-term loudness every 100 ms, each true-peak overshoot, and a row per story and per
sentence (``analyze --report``, ``render --report``).

Use::

    result = check_blocks([pcm], 24000, 1, RULES["ebu"], segments)   # blocks of a file, or one array
    result.verdict.passed, result.as_dict()
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from omnistudio.audio.loudness import BLOCK_S, LoudnessMeter, LoudnessReport
from omnistudio.audio.profiles import LoudnessRule, Verdict


@dataclass(frozen=True)
class Curve:
    """Loudness every ``step_s`` (LUFS; -inf where silent) and each step's true peak (dBTP)."""

    step_s: float
    momentary: tuple[float, ...]
    short_term: tuple[float, ...]
    true_peak: tuple[float, ...]


@dataclass(frozen=True)
class Segment:
    """A part of the file: a story or a sentence, its span and, once measured, its figures."""

    kind: str  # "story" or "sentence"
    label: str
    start_s: float
    end_s: float
    integrated_lufs: float = -math.inf
    true_peak_dbtp: float = -math.inf

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "label": self.label, "start_s": round(self.start_s, 3),
                "end_s": round(self.end_s, 3), "integrated_lufs": _finite(self.integrated_lufs),
                "true_peak_dbtp": _finite(self.true_peak_dbtp)}


@dataclass(frozen=True)
class Compliance:
    """A file's loudness against a rule."""

    report: LoudnessReport
    verdict: Verdict
    curve: Curve
    segments: tuple[Segment, ...]
    overshoots: tuple[tuple[float, float], ...]  # (time s, true peak dBTP) of each 100 ms over the ceiling

    def as_dict(self) -> dict[str, object]:
        return {**self.verdict.as_dict(), "loudness": self.report.as_dict(),
                "overshoots": [{"time_s": round(t, 2), "true_peak_dbtp": _finite(p)} for t, p in self.overshoots],
                "segments": [s.as_dict() for s in self.segments]}


def _finite(value: float) -> float | None:
    return round(value, 2) if math.isfinite(value) else None


def check_blocks(blocks: Iterable[np.ndarray], sample_rate: int, channels: int, rule: LoudnessRule,
                 segments: Sequence[Segment] = (), mono_as: str = "dual-mono") -> Compliance:
    """A signal given block by block (any sizes; memory stays flat however long it is) against ``rule``:
    its figures (fed to the meter in 100 ms steps, as :func:`~omnistudio.audio.loudness.measure` feeds it),
    its curve, each segment's integrated loudness and true peak (a meter of its own while the signal is in
    it), the overshoots."""
    meter = LoudnessMeter(sample_rate, channels, mono_as)
    step = max(1, int(round(BLOCK_S * sample_rate)))
    momentary: list[float] = []
    short: list[float] = []
    peaks: list[float] = []
    spans = [(k, int(round(s.start_s * sample_rate)), int(round(s.end_s * sample_rate))) for k, s in enumerate(segments)]
    open_meters: dict[int, LoudnessMeter] = {}
    measured = list(segments)
    rest, position = np.zeros((0,) if channels == 1 else (0, channels), dtype=np.float32), 0

    def feed(piece: np.ndarray) -> None:
        meter.add(piece)
        momentary.append(meter.momentary())
        short.append(meter.short_term())
        peaks.append(meter.last_true_peak())

    for block in blocks:
        end = position + block.shape[0]
        for k, start, stop in spans:
            lo, hi = max(start, position), min(stop, end)
            if lo < hi:
                open_meters.setdefault(k, LoudnessMeter(sample_rate, channels, mono_as)).add(block[lo - position:hi - position])
        for k in [k for k in open_meters if spans[k][2] <= end]:  # a segment over: its figures, its meter gone
            measured[k] = _measured(segments[k], open_meters.pop(k))
        data = np.concatenate([rest, block]) if rest.shape[0] else block
        whole = data.shape[0] - data.shape[0] % step
        for start in range(0, whole, step):
            feed(data[start:start + step])
        rest, position = data[whole:], end
    if rest.shape[0]:
        feed(rest)
    for k, open_meter in open_meters.items():  # segments that run past the end
        measured[k] = _measured(segments[k], open_meter)
    report = meter.report()
    curve = Curve(step / sample_rate, tuple(momentary), tuple(short), tuple(peaks))
    verdict = rule.verdict(report.integrated_lufs, report.true_peak_dbtp)
    over = tuple((k * curve.step_s, peak) for k, peak in enumerate(curve.true_peak)
                 if math.isfinite(peak) and peak > rule.true_peak_dbtp + 0.05)
    return Compliance(report, verdict, curve, tuple(measured), over)


def _measured(segment: Segment, meter: LoudnessMeter) -> Segment:
    return Segment(segment.kind, segment.label, segment.start_s, segment.end_s, meter.integrated(), meter.true_peak())
