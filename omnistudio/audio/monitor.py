"""What the producer monitors is the level the export will have.

The finishing pass (:mod:`omnistudio.audio.finishing`) normalises a whole take to its loudness target
under the true-peak ceiling; a take played live has not been finished, so it would sit wherever the
model left it (7-14 dB under a -23 or -16 LUFS target on speech). :class:`MonitorLevel` applies the
finishing gain to the monitor as the take plays: each rendered sentence is measured before it is queued
(the 1-ahead stream renders it before it is heard), and the gain for what is queued next is the target
minus the integrated loudness of the take so far, as the finishing pass will compute it over the whole
take. A piece that the gain would push over the ceiling goes through the finishing pass's limiter.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from omnistudio.audio.loudness import LoudnessMeter, limit_true_peak

if TYPE_CHECKING:
    from omnistudio.audio.finishing import FinishingOptions


class MonitorLevel:
    """The finishing gain of the take being played, from its sentences measured so far."""

    def __init__(self, sample_rate: int, target_lufs: float, ceiling_db: float) -> None:
        self.sample_rate = sample_rate
        self.target_lufs = target_lufs
        self.ceiling_db = ceiling_db
        self._meter = LoudnessMeter(sample_rate, true_peak=False)

    @classmethod
    def of(cls, finishing: FinishingOptions, sample_rate: int) -> MonitorLevel:
        """The monitor level of a take finished with ``finishing`` (its target and ceiling)."""
        return cls(sample_rate, finishing.target_lufs, finishing.true_peak_db)

    def measure(self, pcm: np.ndarray) -> None:
        """A rendered sentence of the take (as the file's finishing pass will measure it)."""
        self._meter.add(np.asarray(pcm, dtype=np.float32))

    @property
    def gain_db(self) -> float:
        """The gain to the target from the take measured so far (0 before any speech above the gate)."""
        loudness = self._meter.integrated()
        return self.target_lufs - loudness if math.isfinite(loudness) else 0.0

    def apply(self, pcm: np.ndarray) -> np.ndarray:
        """``pcm`` at the take's gain, limited to the ceiling where the gain pushes it over (float32)."""
        if pcm.size == 0:
            return pcm
        scaled = np.asarray(pcm, dtype=np.float64) * 10 ** (self.gain_db / 20)
        if float(np.max(np.abs(scaled))) > 10 ** ((self.ceiling_db - 0.5) / 20):  # near the ceiling: its limiter
            scaled = limit_true_peak(scaled, self.sample_rate, self.ceiling_db - 0.05)
        return scaled.astype(np.float32)
