"""`omnistudio analyze FILE [--json]`: every loudness figure of an audio file (BS.1770-4 / EBU R128)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

SILENT_NOTE = "silent: nothing above the -70 LUFS gate, so the loudness figures are -inf (null in JSON)"
LABELS = [
    ("integrated_lufs", "Integrated loudness", "LUFS"),
    ("loudness_range_lu", "Loudness range", "LU"),
    ("momentary_max_lufs", "Momentary max (400 ms)", "LUFS"),
    ("short_term_max_lufs", "Short-term max (3 s)", "LUFS"),
    ("true_peak_dbtp", "True peak", "dBTP"),
    ("sample_peak_dbfs", "Sample peak", "dBFS"),
    ("crest_factor_db", "Crest factor", "dB"),
    ("rms_dbfs", "RMS", "dBFS"),
]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="print every loudness figure of an audio file")
    p.add_argument("file", type=Path, help="audio file (WAV, FLAC, ...)")
    p.add_argument("--mono-as", choices=["dual-mono", "mono"], default="dual-mono",
                   help="how a mono file is measured (default dual-mono: as played on two loudspeakers; "
                        "mono reads 3.01 LU lower)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from omnistudio.audio.loudness import analyze_file

    report = analyze_file(args.file, mono_as=args.mono_as)
    note = SILENT_NOTE if not math.isfinite(report.integrated_lufs) else None
    if args.json:
        print(json.dumps({"file": str(args.file), **report.as_dict(), **({"note": note} if note else {})}))
        return 0
    print(f"{args.file}: {report.duration_s:.2f} s, {report.sample_rate} Hz, {report.channels} ch, "
          f"measured as {report.channel_mode}")
    values = report.as_dict()
    for key, label, unit in LABELS:
        value = getattr(report, key)
        shown = f"{values[key]:.1f}" if values[key] is not None else ("-inf" if math.isinf(value) else "n/a")
        print(f"  {label:<24} {shown:>7} {unit}")
    if note:
        print(f"  note: {note}")
    return 0
