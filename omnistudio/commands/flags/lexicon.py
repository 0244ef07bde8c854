"""``--project`` for the lexicon commands and ``normalize``: which lexicon file a command edits, and
the lexicon the front-end uses (the global one, with the project's over it). The project folder is
checked as ``render --project`` checks it (:func:`omnistudio.projects.project.check_project_path`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from omnistudio.errors import UserError
from omnistudio.text.lexicon import Lexicon
from omnistudio.text.lexicon_files import effective_lexicon, global_lexicon_path, project_lexicon_path


def add_project_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--project", type=Path, metavar="NAME.omniproj", help=what)


def project_folder(args: argparse.Namespace, *, must_exist: bool) -> Path | None:
    """The --project folder (None without it); ``must_exist``: one line when there is none yet (a
    command that only reads); otherwise it is created on first write, as ``render --project`` does."""
    # lazy: start-up (numpy)
    from omnistudio.projects.project import check_project_path

    if args.project is None:
        return None
    folder = check_project_path(args.project)
    if must_exist and not folder.is_dir():
        raise UserError(f"no project at {folder}: add a word with lexicon add --project, or render --project first")
    return folder


def lexicon_file(args: argparse.Namespace, *, must_exist: bool) -> Path:
    """The lexicon file a command edits: the project's with --project, else the global one."""

    folder = project_folder(args, must_exist=must_exist)
    return global_lexicon_path() if folder is None else project_lexicon_path(folder)


def effective(args: argparse.Namespace) -> Lexicon:
    """The lexicon the front-end uses for this command: the global one, the project's over it."""

    return effective_lexicon(project_folder(args, must_exist=True))
