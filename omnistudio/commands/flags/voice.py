"""The CLI's voice flags (``--voice/--blend/--alpha``, ``--ref-audio/--ref-text``) turned into a
:class:`~omnistudio.voices.resolve.VoiceRef` for the core (the model flags: :mod:`.engine`)."""

from __future__ import annotations

import argparse

from omnistudio.errors import UserError
from omnistudio.voices.resolve import VoiceRef
from omnistudio.voices.roster import load_roster


def check_voice_args(args: argparse.Namespace) -> str | None:
    """The cheap checks of ``--voice`` / ``--ref-audio --ref-text`` (before any model loads).

    Returns "anchor", "reference", or None when neither is given."""
    # lazy: start-up (numpy)
    from omnistudio.engine.reference import check_transcript, read_reference

    if args.voice and args.ref_audio:
        raise UserError("give either --voice or --ref-audio, not both")
    if args.voice:
        roster = load_roster()
        roster.get(args.voice)  # unknown anchor: one line with a close match
        if getattr(args, "blend", None):
            roster.get(args.blend)  # checked at every alpha (at 1 the blend is --voice alone and never loads it)
        return "anchor"
    if args.ref_audio is not None:
        check_transcript(args.ref_text)
        read_reference(args.ref_audio)
        return "reference"
    return None


def voice_from_args(args: argparse.Namespace) -> VoiceRef | None:
    """The voice the flags name (after :func:`check_voice_args`): an anchor, a blend, a recording."""
    blend = getattr(args, "blend", None)
    if blend:
        if not args.voice:
            raise UserError("--blend needs --voice (the first anchor of the blend)")
        return VoiceRef.blend_of(args.voice, blend, args.alpha)
    if getattr(args, "voice", None):
        return VoiceRef.anchor_of(args.voice)
    if getattr(args, "ref_audio", None) is not None:
        return VoiceRef.recording_of(args.ref_audio, args.ref_text)
    return None
