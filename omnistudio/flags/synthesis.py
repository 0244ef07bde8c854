"""``--num-step --seed --guidance --sampler``: defined here once for every parser that synthesises
(``say``, ``render``, ``bench``, ``python -m omnistudio.bench.memory``); values are checked by
:mod:`omnistudio.checks` (``check_num_step``, ``check_seed``, ``check_guidance``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from omnistudio.checks import DEFAULT_NUM_STEP

DEFAULT_GUIDANCE = 2.0


def add_num_step(parser: argparse.ArgumentParser, default: int = DEFAULT_NUM_STEP,
                 convert: Callable[[str], int] | None = None) -> None:
    """``--num-step``: checked later by ``check_num_step`` (one line), unless ``convert`` is argparse's type."""
    if convert is None:  # argparse's default: the string as given
        parser.add_argument("--num-step", default=default, help=f"diffusion steps (default {default})")
    else:
        parser.add_argument("--num-step", default=default, type=convert, help=f"diffusion steps (default {default})")


def add_seed(parser: argparse.ArgumentParser, seed_help: str) -> None:
    parser.add_argument("--seed", default=0, help=seed_help)


def add_guidance(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--guidance", type=float, default=DEFAULT_GUIDANCE, help="classifier-free guidance scale")


def add_synthesis_options(parser: argparse.ArgumentParser, seed_help: str, sampler: bool = True) -> None:
    """--num-step/--seed/--guidance, and --sampler unless ``sampler`` is False (``bench`` picks its own)."""
    add_num_step(parser)
    add_seed(parser, seed_help)
    add_guidance(parser)
    if sampler:
        parser.add_argument("--sampler", choices=["fast", "stock"], default="fast",
                            help="fast sampler (default) or OmniVoice's stock loop")
