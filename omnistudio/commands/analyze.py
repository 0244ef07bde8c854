"""`omnistudio analyze FILE [--profile RULE] [--report OUT.html] [--json] [--strict]`: every loudness figure
of an audio file (BS.1770-4 / EBU R128), whether it meets a loudness rule, what its Broadcast Wave chunks
say, and a report page with the loudness plot and a row per story and sentence."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from omnistudio.audio.profiles import check_profile
from omnistudio.errors import UserError

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


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("analyze", help="print every loudness figure of an audio file")
    p.add_argument("file", type=Path, help="audio file (WAV, FLAC, ...)")
    p.add_argument("--mono-as", choices=["dual-mono", "mono"], default=None,
                   help="how a mono file is measured: mono (BS.1770 as it is: one channel, weight 1.0) or "
                        "dual-mono (as played on two loudspeakers, 3.01 LU higher); default: what the file "
                        "records, else dual-mono")
    p.add_argument("--profile", default=None, metavar="RULE",
                   help="the loudness rule to check against: ebu, atsc, podcast or streaming (default: the one "
                        "the file records it was made to, else ebu)")
    p.add_argument("--report", type=Path, default=None, metavar="OUT.html",
                   help="also write the compliance report: verdict, figures, loudness plot, a row per story "
                        "and sentence (from the file's sidecar or its cue markers)")
    p.add_argument("--strict", action="store_true", help="exit with status 3 when the file fails the rule")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    # lazy: start-up (numpy, pyebur128)
    from omnistudio.take.qc import check_file, write_report

    rule = check_profile(args.profile) if args.profile is not None else None
    if args.report is not None:
        # lazy: start-up (numpy)
        from omnistudio.audio.export import check_not_input, check_writable_path

        if args.report.suffix.lower() not in (".html", ".htm"):
            raise_usage(f"--report {args.report}: the report is an HTML page: name it .html")
        check_writable_path(args.report)
        check_not_input(args.report, {"the file analysed": args.file}, sidecar=False)  # a link to it, too
    check = check_file(args.file, rule, args.mono_as)
    if check.broadcast.warnings:
        # lazy: start-up (rich)
        from omnistudio.console import err_console

        for warning in check.broadcast.warnings:
            err_console.print(f"omnistudio: warning: {args.file}: {warning}", markup=False, highlight=False,
                              soft_wrap=True)
    report, verdict = check.compliance.report, check.compliance.verdict
    if args.report is not None:
        write_report(check, args.report)
    note = SILENT_NOTE if not math.isfinite(report.integrated_lufs) else None
    if args.json:
        print(json.dumps({"file": str(args.file), **report.as_dict(), **{k: v for k, v in check.as_dict().items() if k != "loudness"}, **({"note": note} if note else {}),
                          **({"report": str(args.report)} if args.report is not None else {})}))
        return 3 if args.strict and not verdict.passed else 0
    made = check.recorded
    from_file = " (as the file records)" if made.measured_as and args.mono_as is None and report.channels == 1 else ""
    print(f"{args.file}: {report.duration_s:.2f} s, {report.sample_rate} Hz, {report.channels} ch, "
          f"measured as {report.channel_mode}{from_file}")
    values = report.as_dict()
    for key, label, unit in LABELS:
        value = getattr(report, key)
        shown = f"{values[key]:.1f}" if values[key] is not None else ("-inf" if math.isinf(value) else "n/a")
        print(f"  {label:<24} {shown:>7} {unit}")
    if note:
        print(f"  note: {note}")
    rule = verdict.rule
    why = [] if verdict.passed else (["loudness outside the tolerance"] if not verdict.loudness_ok else []) + (
        ["true peak over the ceiling"] if not verdict.true_peak_ok else [])
    recorded_rule = " (the rule the file records)" if made.profile and args.profile is None else ""
    print(f"  {rule.name}{recorded_rule}: {'PASS' if verdict.passed else 'FAIL'} ({rule.target_lufs:g} LUFS ± "
          f"{rule.tolerance_lu:g} LU, true peak <= {rule.true_peak_dbtp:g} dBTP){': ' + ', '.join(why) if why else ''}")
    back = check.broadcast
    if back.loudness:
        shown = ", ".join(f"{key} {'unset' if value is None else f'{value:g}'}" for key, value in back.loudness.items())
        print(f"  bext: {back.originator or '?'}: {back.description or '(no description)'}; {shown}")
    if back.markers:
        print(f"  markers: {sum(m.end_s is None for m in back.markers)} sentences, "
              f"{sum(m.end_s is not None for m in back.markers)} stories")
    if args.report is not None:
        print(f"  report: {args.report}")
    return 3 if args.strict and not verdict.passed else 0


def raise_usage(message: str) -> None:
    raise UserError(message)
