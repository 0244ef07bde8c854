"""``render``'s script and take flags (``--batch``, ``--lang``, ...) checked into TakeOptions and the
parsed script, shared by ``render``, ``render --project`` and ``render --ray``."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from omnistudio.errors import UserError


def known_speakers() -> set[str]:
    from omnistudio.voices.roster import load_roster

    return set(load_roster().anchors)


def check_voice_options(args: argparse.Namespace, script: Any) -> Any:
    """The voice of untagged lines (a VoiceRef, or None when every line is tagged)."""
    from omnistudio.commands.flags.voice import check_voice_args, voice_from_args

    if check_voice_args(args) is None:
        untagged = next((s for s in script.sentences if s.speaker is None), None)
        if untagged is not None:
            raise UserError(f"line {untagged.line} has no speaker tag: give --voice ANCHOR or "
                            "--ref-audio FILE --ref-text TEXT")
    return voice_from_args(args)


def take_options(args: argparse.Namespace) -> Any:
    """The take options the flags name (checked), without the default voice."""
    from omnistudio.checks import check_batch
    from omnistudio.commands.flags.finishing import finishing_options
    from omnistudio.take.options import TakeOptions

    from omnistudio.commands.flags.frontend import frontend_options

    finishing = finishing_options(args)
    check_batch(args.batch, "--batch")
    return TakeOptions(num_step=args.num_step, guidance_scale=args.guidance, seed=args.seed, batch=args.batch,
                       lang=args.lang, finishing=finishing, **frontend_options(args)).validated()


def plan_script(args: argparse.Namespace, text: str, options: Any) -> tuple[Any, Any]:
    """The parsed script (speakers checked against the roster) and the options with its default voice."""
    from omnistudio.script import parse_script

    tagged = any(line.lstrip().startswith("[") for line in text.splitlines())
    script = parse_script(text, options.lang, speakers=known_speakers() if tagged else None)
    return script, replace(options, voice=check_voice_options(args, script))
