"""``render``'s script and take flags (``--batch``, ``--lang``, ...) checked into TakeOptions and the
parsed script, shared by ``render``, ``render --project`` and ``render --ray``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from omnistudio.checks import check_batch
from omnistudio.commands.flags.frontend import frontend_options
from omnistudio.commands.flags.voice import check_voice_args, voice_from_args
from omnistudio.projects.presets import read_presets

if TYPE_CHECKING:
    from omnistudio.script import Script
    from omnistudio.take.options import TakeOptions
    from omnistudio.voices.resolve import VoiceRef


def check_voice_options(args: argparse.Namespace) -> VoiceRef | None:
    """The voice of untagged lines (a VoiceRef, or None when the flags name none)."""

    return voice_from_args(args) if check_voice_args(args) is not None else None


def take_options(args: argparse.Namespace) -> TakeOptions:
    """The take options the flags name (checked), without the default voice."""
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.commands.flags.finishing import finishing_options
    from omnistudio.take.options import TakeOptions

    finishing = finishing_options(args)
    check_batch(args.batch, "--batch")
    return TakeOptions(num_step=args.num_step, guidance_scale=args.guidance, seed=args.seed, batch=args.batch,
                       lang=args.lang, finishing=finishing, **frontend_options(args)).validated()


def plan_script(args: argparse.Namespace, text: str, options: TakeOptions) -> tuple[Script, TakeOptions]:
    """The parsed script (speakers checked against the roster) and the options with its default voice
    (the core's :func:`omnistudio.take.scripts.plan_script`, with the flags' voice)."""
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.scripts import plan_script as plan

    project = getattr(args, "project", None)  # render --project: the project's duo presets are speakers
    presets = read_presets(project)[0] if project is not None else None
    return plan(text, options, check_voice_options(args), "give --voice ANCHOR or --ref-audio FILE --ref-text TEXT",
                presets)
