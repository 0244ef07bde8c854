"""Whether a file meets a loudness rule, and the figures that show it: the programme's, a curve of its
momentary and short-term loudness every 100 ms, each true-peak overshoot, and a row per story and per
sentence (``analyze --report``, ``render --report``).

Use::

    result = check_signal(pcm, 24000, RULES["ebu"], segments)   # segments: Segment.span(...)s, or ()
    result.verdict.passed, result.as_dict()
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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


def curve_of(data: np.ndarray, sample_rate: int, mono_as: str = "dual-mono") -> tuple[LoudnessReport, Curve]:
    """The figures of a whole signal (as :func:`~omnistudio.audio.loudness.measure` gives them: the same
    100 ms feeding) and its curve."""
    channels = 1 if data.ndim == 1 else data.shape[1]
    meter = LoudnessMeter(sample_rate, channels, mono_as)
    step = max(1, int(round(BLOCK_S * sample_rate)))
    momentary, short, peaks = [], [], []
    for start in range(0, data.shape[0], step):
        meter.add(data[start:start + step])
        momentary.append(meter.momentary())
        short.append(meter.short_term())
        peaks.append(meter.last_true_peak())
    return meter.report(), Curve(step / sample_rate, tuple(momentary), tuple(short), tuple(peaks))


def check_signal(data: np.ndarray, sample_rate: int, rule: LoudnessRule, segments: Sequence[Segment] = (),
                 mono_as: str = "dual-mono") -> Compliance:
    """``data`` ([frames] or [frames, channels]) measured against ``rule``; each segment measured alone."""
    from omnistudio.audio.loudness import measure

    report, curve = curve_of(data, sample_rate, mono_as)
    verdict = rule.verdict(report.integrated_lufs, report.true_peak_dbtp)
    over = tuple((k * curve.step_s, peak) for k, peak in enumerate(curve.true_peak)
                 if math.isfinite(peak) and peak > rule.true_peak_dbtp + 0.05)
    measured = []
    for segment in segments:
        start, end = (int(round(t * sample_rate)) for t in (segment.start_s, segment.end_s))
        part = data[max(0, start):min(data.shape[0], end)]
        if part.shape[0] == 0:
            measured.append(segment)
            continue
        figures = measure(part, sample_rate, mono_as)
        measured.append(Segment(segment.kind, segment.label, segment.start_s, segment.end_s,
                                figures.integrated_lufs, figures.true_peak_dbtp))
    return Compliance(report, verdict, curve, tuple(measured), over)
