"""The loudness rules a delivery is made to and checked against: one table, here and in docs/cli.md.

Each rule names its integrated-loudness target, its maximum true peak and how far a programme may sit
from the target and still pass; the file a delivery to it is by default (:class:`DeliveryFormat`: the
broadcast rules two-channel dual-mono PCM at 48 kHz/24-bit, so every BS.1770 meter reads the same figure
whatever it makes of mono); and how a one-channel file is levelled under it. Every one-channel delivery
is measured as BS.1770-4 measures a single channel (weight 1.0), the way a playout server or a QC station
reads the file as it is: EBU R128 and ATSC A/85 apply BS.1770 as it stands (target unchanged); AES
TD1004 (podcast and streaming playback) puts a mono file 3 LU under the stereo target (-19 for -16),
because players send mono to both loudspeakers at full level. ``render --profile``, the studio's setting, the server's ``profile`` and
``analyze --profile`` all read this table; ``--target-lufs``/``--true-peak`` still override a rule's
figures for a render.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from omnistudio.checks import FloatLike, check_number
from omnistudio.errors import UserError

TARGET_LUFS = -23.0  # EBU R128
TRUE_PEAK_DBTP = -1.0


CHANNEL_COUNTS = (1, 2)
BIT_DEPTHS = (16, 24, 32)  # 32: float; 24 and 16: PCM (16 with TPDF dither)
SAMPLE_RATES = (24_000, 44_100, 48_000)
ENGINE_RATE = 24_000  # what the vocoder makes


@dataclass(frozen=True)
class DeliveryFormat:
    """What a delivered file holds: channels (2: the voice on both, dual-mono), sample rate, bits."""

    channels: int = 1
    sample_rate: int = ENGINE_RATE
    bits: int = 32

    def check(self) -> DeliveryFormat:
        """This format, or a UserError naming the value no delivery takes."""
        if self.channels not in CHANNEL_COUNTS:
            raise UserError(f"{self.channels} channels: a delivery has 1 (mono) or 2 (dual-mono)")
        if self.sample_rate not in SAMPLE_RATES:
            raise UserError(f"sample rate {self.sample_rate}: use one of {', '.join(map(str, SAMPLE_RATES))}")
        if self.bits not in BIT_DEPTHS:
            raise UserError(f"{self.bits} bits: use 16 or 24 (PCM) or 32 (float)")
        return self

    @property
    def measured_as(self) -> str:
        """How a meter measures this file as it is (BS.1770-4): ``stereo`` for two channels, ``mono``."""
        return "stereo" if self.channels == 2 else "mono"


@dataclass(frozen=True)
class LoudnessRule:
    """A loudness rule: its name, target (LUFS), true-peak ceiling (dBTP) and tolerance (± LU); the file a
    delivery to it is by default, and where a one-channel file's target sits against the stereo one."""

    key: str  # what --profile takes
    name: str  # what a report calls it
    target_lufs: float
    true_peak_dbtp: float
    tolerance_lu: float
    delivery: DeliveryFormat = DeliveryFormat()
    mono_offset_lu: float = 0.0  # a one-channel file's target, relative to target_lufs

    def for_file(self, channels: int) -> LoudnessRule:
        """The rule as it applies to a file of ``channels`` channels measured as it is (a mono file's
        target moved by ``mono_offset_lu``)."""
        if channels != 1 or not self.mono_offset_lu:
            return self
        target = self.target_lufs + self.mono_offset_lu
        return replace(self, name=f"{self.name}, mono ({target:g} LUFS)", target_lufs=target, mono_offset_lu=0.0)

    def format(self, channels: int | None = None, sample_rate: int | None = None,
               bits: int | None = None) -> DeliveryFormat:
        """This rule's delivery format with any of its figures overridden (checked)."""
        base = self.delivery
        return DeliveryFormat(base.channels if channels is None else int(channels),
                              base.sample_rate if sample_rate is None else int(sample_rate),
                              base.bits if bits is None else int(bits)).check()

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


PLAYOUT = DeliveryFormat(channels=2, sample_rate=48_000, bits=24)
RULES: dict[str, LoudnessRule] = {rule.key: rule for rule in (
    LoudnessRule("ebu", "EBU R128", -23.0, -1.0, 0.5, PLAYOUT),
    LoudnessRule("atsc", "ATSC A/85", -24.0, -2.0, 2.0, PLAYOUT),
    LoudnessRule("podcast", "Podcast (-16 LUFS)", -16.0, -1.0, 1.0, mono_offset_lu=-3.0),
    LoudnessRule("streaming", "Streaming (-14 LUFS)", -14.0, -1.0, 1.0, mono_offset_lu=-3.0),
)}
DEFAULT_PROFILE = "ebu"


def check_profile(value: object) -> LoudnessRule:
    """A rule by its key (one line naming the keys when it is not one)."""
    key = str(value or "").strip().lower()
    if key not in RULES:
        raise UserError(f"unknown loudness profile '{value}': use one of {', '.join(RULES)}")
    return RULES[key]


PRESETS = {key: rule.target_lufs for key, rule in RULES.items()}  # a profile's name as a target (--target-lufs ebu)


def check_target_lufs(value: FloatLike) -> float:
    """A target loudness in LUFS: a number in -70..0 or a preset name (ebu, podcast, streaming)."""
    if isinstance(value, str) and value.strip().lower() in PRESETS:
        return PRESETS[value.strip().lower()]
    return check_number(value, -70.0, 0.0, f"target loudness {value!r} is not a number (LUFS, e.g. -23, -16, "
                        f"-14, or one of {', '.join(PRESETS)})", f"target loudness {value} LUFS is outside -70..0")


def check_true_peak(value: FloatLike) -> float:
    """A true-peak ceiling in dBTP: a number in -20..0."""
    return check_number(value, -20.0, 0.0, f"true-peak ceiling {value!r} is not a number (dBTP, e.g. -1)",
                        f"true-peak ceiling {value} dBTP is outside -20..0")
