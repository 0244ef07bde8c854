"""``--play``'s device flags (``render``, ``say -``): which output, its callback block, its latency."""

from __future__ import annotations

import argparse


def add_playback_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--audio-device", help="output device name or index for --play (default: system default)")
    p.add_argument("--blocksize", type=int, default=0, help="audio callback block in frames (0: device's choice)")
    p.add_argument("--latency", default="0.2", help="output latency: low, high or seconds (default 0.2: "
                   "PortAudio's 'high' is 35 ms on PulseAudio, too short for a busy engine thread)")
