"""``--no-normalize`` and the lexicon a rendering command speaks with: the text front-end's settings
(:class:`~omnistudio.take.options.TakeOptions` ``normalize`` and ``lexicon``), the same for ``say``,
``render``, ``render --project`` and ``render --ray``."""

from __future__ import annotations

import argparse
from typing import TypedDict

from omnistudio.text.lexicon import Lexicon
from omnistudio.text.lexicon_files import effective_lexicon


class FrontendOptions(TypedDict):
    """TakeOptions' ``normalize`` and ``lexicon`` (``TakeOptions(**frontend_options(args))``)."""

    normalize: bool
    lexicon: Lexicon


def add_frontend_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--normalize", action=argparse.BooleanOptionalAction, default=True,
                        help="say numbers, money, dates, abbreviations as a newsreader does and apply the "
                             "pronunciation lexicon (default on; --no-normalize sends the text as written)")


def frontend_options(args: argparse.Namespace) -> FrontendOptions:
    """``normalize`` and ``lexicon`` for TakeOptions: the global lexicon, with a ``--project``'s over it."""
    # lazy: start-up (numpy)
    from omnistudio.projects.project import check_project_path

    if not args.normalize:
        return {"normalize": False, "lexicon": Lexicon()}
    project = getattr(args, "project", None)
    return {"normalize": True, "lexicon": effective_lexicon(check_project_path(project) if project else None)}
