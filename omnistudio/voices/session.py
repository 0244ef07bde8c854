"""Opening an engine and a voice from command-line style options (shared by CLI commands)."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from typing import Any

from omnistudio.engine.engine import Engine
from omnistudio.engine.reference import Reference


def check_voice_args(args: Namespace) -> str | None:
    """The cheap checks of ``--voice`` / ``--ref-audio --ref-text`` (before any model loads).

    Returns "anchor", "reference", or None when neither is given."""
    from omnistudio.engine.reference import check_transcript, read_reference
    from omnistudio.errors import UserError

    if args.voice and args.ref_audio:
        raise UserError("give either --voice or --ref-audio, not both")
    if args.voice:
        from omnistudio.voices.roster import load_roster

        load_roster().get(args.voice)  # unknown anchor: one line with a close match
        return "anchor"
    if args.ref_audio is not None:
        check_transcript(args.ref_text)
        read_reference(args.ref_audio)
        return "reference"
    return None


def open_engine(args: Namespace, progress: Callable[[str], None] | None = None) -> Engine:
    """Load the model named by ``--model/--device/--dtype`` and pick the sampler."""
    engine = Engine.load(getattr(args, "model", None), device=getattr(args, "device", None),
                         dtype=getattr(args, "dtype", None), progress=progress)
    if getattr(args, "sampler", "fast") == "fast":
        try:
            from omnistudio.engine.sampler import FastSampler
        except ImportError:
            return engine
        engine.sampler = FastSampler(engine.model)
    return engine


def resolve_voice(engine: Engine, args: Namespace, lang: str,
                  progress: Callable[[str], None] | None = None) -> Any:
    """The voice named by ``--voice`` (an anchor's prompt) or ``--ref-audio/--ref-text``."""
    if getattr(args, "blend", None):
        from omnistudio.voices.blend import anchor_blend

        return anchor_blend(engine, args.voice, args.blend, lang, args.alpha, progress=progress)
    if getattr(args, "voice", None):
        from omnistudio.voices.prompts import anchor_prompt

        return anchor_prompt(engine, args.voice, lang, progress=progress)
    return Reference(args.ref_audio, args.ref_text)
