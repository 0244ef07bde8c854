"""`omnistudio prevectorize`: build the anchors' voice prompts ahead of time (resumable)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Required, TypedDict

from omnistudio.checks import check_language
from omnistudio.errors import UserError
from omnistudio.flags.engine import add_model_options, engine_from_args
from omnistudio.voices.roster import load_roster

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


class PromptRow(TypedDict, total=False):
    """One prompt's line of the report (``--json``: one JSON object a prompt, keys in this order)."""

    anchor: Required[str]
    lang: Required[str]
    action: str  # skipped, built, rebuilt or failed
    ref_text: str
    transcript: str  # where the transcript came from
    agreement: float | None
    note: str
    seconds: float


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("prevectorize", help="build the anchors' voice prompts (skips those already ready)")
    p.add_argument("--anchors", nargs="+", metavar="ID", help="only these anchors (default: all)")
    p.add_argument("--lang", nargs="+", metavar="L", help="only these languages: es, en (default: both)")
    p.add_argument("--asr-model", type=Path, metavar="DIR",
                   help="faster-whisper model directory to calibrate transcripts "
                        "(default $OMNISTUDIO_ASR_MODEL; without one the roster's transcripts are used)")
    p.add_argument("--force", action="store_true", help="rebuild prompts even when they are ready")
    p.add_argument("--json", action="store_true", help="print the per-prompt report as JSON lines")
    add_model_options(p)


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [v for item in values for v in item.replace(",", " ").split()]


def run(args: argparse.Namespace) -> int:
    # lazy: start-up (numpy, rich)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    # lazy: start-up (numpy, rich)
    from omnistudio.console import err_console, progress_bar, status
    from omnistudio.voices.asr import open_transcriber
    from omnistudio.voices.prompts import ensure_prompt

    langs = [check_language(lang) for lang in _split(args.lang) or []] or None
    roster = load_roster()
    pairs = roster.pairs(_split(args.anchors), langs)
    transcriber = open_transcriber(args.asr_model)
    with status("loading model") as update:
        engine = engine_from_args(args, progress=update)

    rows: list[PromptRow] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with progress_bar(*columns, transient=False) as bar:
        task = bar.add_task("voice prompts", total=len(pairs))
        for anchor_id, lang in pairs:
            bar.update(task, description=f"{anchor_id} ({lang})")
            started = time.perf_counter()
            row: PromptRow = {"anchor": anchor_id, "lang": lang}
            try:
                prompt, action, cal = ensure_prompt(engine, roster, anchor_id, lang, transcriber=transcriber,
                                                    force=args.force)
                row.update({"action": action, "ref_text": prompt.ref_text,
                            "transcript": (cal.source if cal else prompt.meta.get("transcript_source", "")),
                            "agreement": cal.agreement if cal else None, "note": cal.note if cal else ""})
            except UserError as exc:  # one bad anchor does not stop the others
                row.update({"action": "failed", "note": str(exc)})
            row["seconds"] = round(time.perf_counter() - started, 3)
            rows.append(row)
            bar.advance(task)

    if args.json:
        for row in rows:
            print(json.dumps(row, ensure_ascii=False))
    else:
        _summary(Console(), Table, rows)
    failed = [r for r in rows if r["action"] == "failed"]
    if failed:
        err_console.print(f"omnistudio: {len(failed)} of {len(rows)} prompts failed", markup=False)
        return 1
    return 0


def _summary(console: Console, table_cls: type[Table], rows: list[PromptRow]) -> None:
    """A table of what was built (skipped prompts are only counted), then each failure in full."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["action"]] = counts.get(row["action"], 0) + 1
    built = [r for r in rows if r["action"] in {"built", "rebuilt"}]
    if built:
        table = table_cls(title="voice prompts")
        for col, width in (("anchor", 9), ("lang", 4), ("action", 7), ("s", 5), ("from", 6), ("agree", 5)):
            table.add_column(col, no_wrap=True, min_width=width)
        table.add_column("transcript", no_wrap=True, overflow="ellipsis", max_width=22)
        for r in built:
            agreement = "" if r.get("agreement") is None else f"{r['agreement']:.0%}"
            table.add_row(r["anchor"], r["lang"], r["action"], f"{r['seconds']:.2f}", r.get("transcript", ""),
                          agreement, r.get("ref_text", ""))
        console.print(table)
        for note in sorted({r["note"] for r in built if r.get("note")}):
            console.print(f"note: {note}", markup=False, highlight=False)
    for r in rows:
        if r["action"] == "failed":
            console.print(f"failed: {r['anchor']} ({r['lang']}): {r['note']}", markup=False, highlight=False)
    total = sum(r["seconds"] for r in rows)
    console.print(", ".join(f"{n} {a}" for a, n in sorted(counts.items())) + f" in {total:.1f} s",
                  markup=False, highlight=False)
