"""The CLI's finishing flags (``--profile --target-lufs --true-peak --channels --rate --bits --room-tone
--breaths --shm``) as
:class:`~omnistudio.audio.finishing.FinishingOptions` (the core takes plain values)."""

from __future__ import annotations

import argparse

from omnistudio.audio.dsp import ROOM_TONE_DB
from omnistudio.audio.finishing import FinishingOptions
from omnistudio.audio.profiles import (
    BIT_DEPTHS,
    CHANNEL_COUNTS,
    PRESETS,
    RULES,
    SAMPLE_RATES,
    TARGET_LUFS,
    TRUE_PEAK_DBTP,
    DeliveryFormat,
    check_profile,
    check_target_lufs,
    check_true_peak,
)
from omnistudio.audio.shm import check_shm_name


def add_finishing_options(parser: argparse.ArgumentParser) -> None:
    """Add the finishing flags; values are checked by ``finishing_options(args)``."""
    group = parser.add_argument_group("finishing")
    group.add_argument("--profile", default=None, metavar="RULE",
                       help="the loudness rule to deliver to: " + ", ".join(
                           f"{r.key} ({r.target_lufs:g} LUFS, {r.true_peak_dbtp:g} dBTP)" for r in RULES.values())
                       + "; --target-lufs and --true-peak override its figures; without one: -23 LUFS, one channel "
                         "measured dual-mono, 24 kHz float (a master to finish later)")
    group.add_argument("--target-lufs", default=None, metavar="LUFS",
                       help=f"integrated loudness target, -70..0 or a preset "
                            f"({', '.join(f'{k} {v:g}' for k, v in PRESETS.items())}); default the profile's, "
                            f"{TARGET_LUFS:g}")
    group.add_argument("--true-peak", default=None, metavar="DBTP",
                       help=f"true-peak ceiling in dBTP (default the profile's, {TRUE_PEAK_DBTP:g})")
    group.add_argument("--channels", type=int, default=None, choices=CHANNEL_COUNTS,
                       help="2: the voice on both channels (dual-mono), which every meter reads alike; 1: mono, "
                            "levelled as the profile says for mono (default: ebu and atsc 2, else 1)")
    group.add_argument("--rate", type=int, default=None, metavar="HZ",
                       help=f"sample rate of the file, {', '.join(map(str, SAMPLE_RATES))} (converted by libsoxr; "
                            "default: ebu and atsc 48000, else the engine's 24000)")
    group.add_argument("--bits", type=int, default=None, choices=BIT_DEPTHS,
                       help="24 or 16 (PCM, 16 with TPDF dither) or 32 (float); WAV and FLAC (default: ebu and "
                            "atsc 24, else 32-bit float WAV, 24-bit FLAC)")
    group.add_argument("--room-tone", action=argparse.BooleanOptionalAction, default=True,
                       help=f"pink comfort noise at {ROOM_TONE_DB:g} dBFS under the audio (default on)")
    group.add_argument("--breaths", action=argparse.BooleanOptionalAction, default=True,
                       help="a soft breath in pauses longer than 280 ms (default on)")
    group.add_argument("--shm", metavar="NAME", default=None,
                       help="also write the PCM to /dev/shm/NAME for a downstream process (see docs/shm.md)")


def finishing_options(args: argparse.Namespace) -> FinishingOptions:
    """Validate the finishing flags of parsed ``args`` (UserError on a bad value)."""

    shm = getattr(args, "shm", None)
    if shm is not None:
        # lazy: looked up when called (tests replace it)
        from omnistudio.audio.shm import check_shm_target

        check_shm_target(check_shm_name(shm))  # a directory there, or no /dev/shm: before any work
    profile = getattr(args, "profile", None)
    rule = check_profile(profile) if profile is not None else None
    target, ceiling = getattr(args, "target_lufs", None), getattr(args, "true_peak", None)
    channels, rate, bits = (getattr(args, name, None) for name in ("channels", "rate", "bits"))
    room_tone, breaths = bool(getattr(args, "room_tone", True)), bool(getattr(args, "breaths", True))
    shm_name = check_shm_name(shm) if shm is not None else None
    target_lufs = check_target_lufs(target) if target is not None else None
    true_peak = check_true_peak(ceiling) if ceiling is not None else None
    if rule is not None:
        return FinishingOptions.for_rule(rule, rule.format(channels, rate, bits), target_lufs, true_peak,
                                         room_tone=room_tone, breaths=breaths, shm_name=shm_name)
    base = DeliveryFormat()
    delivery = DeliveryFormat(channels or base.channels, rate or base.sample_rate, bits or base.bits).check()
    return FinishingOptions(target_lufs=TARGET_LUFS if target_lufs is None else target_lufs,
                            true_peak_db=TRUE_PEAK_DBTP if true_peak is None else true_peak, room_tone=room_tone,
                            breaths=breaths, shm_name=shm_name, delivery=delivery)
