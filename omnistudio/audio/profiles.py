"""The loudness rules a delivery is made to and checked against: one table, here and in docs/cli.md.

Each rule names its integrated-loudness target, its maximum true peak and how far a programme may sit
from the target and still pass. ``render --profile``, the studio's setting, the server's ``profile`` and
``analyze --profile`` all read this table; ``--target-lufs``/``--true-peak`` still override a rule's
figures for a render.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from omnistudio.errors import UserError


@dataclass(frozen=True)
class LoudnessRule:
    """A loudness rule: its name, target (LUFS), true-peak ceiling (dBTP) and tolerance (± LU)."""

    key: str  # what --profile takes
    name: str  # what a report calls it
    target_lufs: float
    true_peak_dbtp: float
    tolerance_lu: float

    def verdict(self, integrated_lufs: float, true_peak_dbtp: float) -> Verdict:
        """Whether a programme with these figures passes: loudness within the tolerance of the target, and
        its true peak at or under the ceiling (to the 0.05 dB a meter reads to)."""
        loud_ok = math.isfinite(integrated_lufs) and abs(integrated_lufs - self.target_lufs) <= self.tolerance_lu
        peak_ok = not math.isfinite(true_peak_dbtp) or true_peak_dbtp <= self.true_peak_dbtp + 0.05
        return Verdict(self, loud_ok and peak_ok, loud_ok, peak_ok)


@dataclass(frozen=True)
class Verdict:
    rule: LoudnessRule
    passed: bool
    loudness_ok: bool
    true_peak_ok: bool

    def as_dict(self) -> dict[str, object]:
        return {"profile": self.rule.key, "rule": self.rule.name, "passed": self.passed,
                "loudness_ok": self.loudness_ok, "true_peak_ok": self.true_peak_ok,
                "target_lufs": self.rule.target_lufs, "tolerance_lu": self.rule.tolerance_lu,
                "true_peak_ceiling_dbtp": self.rule.true_peak_dbtp}


RULES: dict[str, LoudnessRule] = {rule.key: rule for rule in (
    LoudnessRule("ebu", "EBU R128", -23.0, -1.0, 0.5),
    LoudnessRule("atsc", "ATSC A/85", -24.0, -2.0, 2.0),
    LoudnessRule("podcast", "Podcast (-16 LUFS)", -16.0, -1.0, 1.0),
    LoudnessRule("streaming", "Streaming (-14 LUFS)", -14.0, -1.0, 1.0),
)}
DEFAULT_PROFILE = "ebu"


def check_profile(value: object) -> LoudnessRule:
    """A rule by its key (one line naming the keys when it is not one)."""
    key = str(value or "").strip().lower()
    if key not in RULES:
        raise UserError(f"unknown loudness profile '{value}': use one of {', '.join(RULES)}")
    return RULES[key]
