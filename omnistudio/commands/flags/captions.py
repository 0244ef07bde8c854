"""The caption flags (``render --captions``, the ``captions`` command's ``--format``, word timestamps
and each cue limit) checked into :class:`~omnistudio.captions.formats.CaptionOptions`."""

from __future__ import annotations

import argparse

from omnistudio.captions.cues import CaptionLimits
from omnistudio.captions.formats import CaptionOptions, check_formats
from omnistudio.errors import UserError
from omnistudio.voices import words
from omnistudio.voices.align import Hearer

DEFAULTS = CaptionLimits()
LIMITS = (  # flag, CaptionLimits field, type, help
    ("--captions-line-chars", "max_line_chars", int, f"characters a line at most (default {DEFAULTS.max_line_chars})"),
    ("--captions-lines", "max_lines", int, f"lines a cue at most (default {DEFAULTS.max_lines})"),
    ("--captions-min-s", "min_duration_s", float, f"seconds a cue shows at least, where its sentence lasts that "
                                                  f"long (default {DEFAULTS.min_duration_s:g})"),
    ("--captions-max-s", "max_duration_s", float, f"seconds a cue shows at most (default {DEFAULTS.max_duration_s:g})"),
    ("--captions-cps", "max_chars_per_s", float, f"reading speed, characters a second at most, where the speech "
                                                 f"allows (default {DEFAULTS.max_chars_per_s:g})"),
)


def add_caption_options(parser: argparse.ArgumentParser, formats_flag: str = "--captions") -> None:
    """The caption group: ``--captions FORMATS`` (render: captions only when asked) or ``--format``
    (the captions command: default srt,vtt), word timestamps and the limits."""
    group = parser.add_argument_group("captions")
    if formats_flag == "--captions":
        group.add_argument("--captions", metavar="FORMATS", help="also write captions: srt, vtt or srt,vtt "
                           "(OUT.srt, OUT.vtt beside -o OUT, written together with it)")
    else:
        group.add_argument("--format", default="srt,vtt", metavar="FORMATS",
                           help="caption files to write: srt, vtt or srt,vtt (default srt,vtt)")
    group.add_argument("--captions-words", action="store_true",
                       help="put each word's start in the WebVTT as a cue timestamp (karaoke players)")
    for flag, _name, kind, text in LIMITS:
        group.add_argument(flag, type=kind, metavar="N" if kind is int else "S" if flag.endswith("-s") else "CPS",
                           help=text)
    group.add_argument("--captions-allow-orphans", action="store_true",
                       help="let a word stand alone on a line (default: never where another break avoids it)")
    group.add_argument("--captions-estimate", action="store_true",
                       help="estimate the word times by syllables, without the speech model (default: measure "
                            "them with Whisper where it is installed and hears the language)")


def caption_options(args: argparse.Namespace) -> CaptionOptions | None:
    """The checked caption options, or None when none are asked for (render without --captions)."""
    formats = getattr(args, "captions", None) if hasattr(args, "captions") else getattr(args, "format", None)
    given = {name: getattr(args, flag[2:].replace("-", "_")) for flag, name, _kind, _text in LIMITS
             if getattr(args, flag[2:].replace("-", "_"), None) is not None}
    if formats is None:
        extra = [flag for flag, name, _kind, _text in LIMITS if name in given]
        extra += [flag for flag, on in (("--captions-words", args.captions_words),
                                        ("--captions-allow-orphans", args.captions_allow_orphans),
                                        ("--captions-estimate", args.captions_estimate)) if on]
        if extra:
            raise UserError(f"{extra[0]} needs --captions FORMATS (srt, vtt or srt,vtt)")
        return None
    if args.captions_allow_orphans:
        given["avoid_orphans"] = False
    return CaptionOptions(check_formats(formats), CaptionLimits(**given), bool(args.captions_words)).validated()


def caption_hearer(args: argparse.Namespace, captions: CaptionOptions | None) -> Hearer | None:
    """The speech model that measures the caption words (``--asr-model DIR``, else $OMNISTUDIO_ASR_MODEL,
    else the packaged Whisper); None without captions, with ``--captions-estimate`` or without a model."""
    if captions is None or args.captions_estimate:
        return None

    return words.caption_hearer(getattr(args, "asr_model", None))
