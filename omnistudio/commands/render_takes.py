"""`render --project` / `render --verify [--retake N]`: render a script take by take.

Each sentence gets a chosen take: kept from the project when it has a fresh one, else rendered
(the first try with the seed plain ``render`` uses, so the audio is the same); with ``--verify``
every take is checked by speech recognition and a failing one is rendered again with new seeds up
to ``--retake`` times, the lowest-WER take chosen. The file is the chosen takes through the same
finishing path as plain ``render``; the sidecar lists each sentence's takes and errors. The flags
and their checks: :mod:`omnistudio.commands.flags.retakes`.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from omnistudio.commands.flags.retakes import open_checker
from omnistudio.commit import write_json
from omnistudio.errors import UserError
from omnistudio.flags.engine import engine_from_args

if TYPE_CHECKING:
    from omnistudio.projects.project import Project
    from omnistudio.script import Script
    from omnistudio.take.link import EngineLink
    from omnistudio.take.options import TakeOptions
    from omnistudio.take.pipeline import PlannedSentence
    from omnistudio.voices.resolve import VoiceRef

    LinkFactory = Callable[[argparse.Namespace, Callable[[str], None]], EngineLink]  # (args, progress) -> link


class TakesDone(TypedDict):
    """What :func:`render_takes` did: the project, the script's planned sentences, the link (None when
    nothing was rendered), the sentences rendered or retaken, how many takes were kept, the failed ones."""

    project: Project
    planned: list[PlannedSentence]
    link: EngineLink | None
    rendered: list[int]
    reused: int
    failed: list[int]


def open_project(args: argparse.Namespace, text: str, lang: str, voice: VoiceRef | None) -> Project:
    """The --project folder brought up to the script, or a project that is never saved."""
    # lazy: start-up (numpy, rich)
    from omnistudio.console import err_console
    from omnistudio.projects.project import Project, open_or_create

    key = voice.key() if voice is not None else ""
    if args.project is None:
        return Project(Path("unsaved.omniproj"), text, lang, key)
    project = open_or_create(args.project, text, lang, key)
    for problem in project.problems:
        err_console.print(f"omnistudio: warning: {args.project}: {problem}", markup=False, highlight=False,
                          soft_wrap=True)
    return project


def engine_link(args: argparse.Namespace, progress: Callable[[str], None]) -> EngineLink:
    """The engine the flags name, behind the take link (tests pass another link)."""
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.link import LocalEngine

    return LocalEngine(engine_from_args(args, progress=progress))


def render_takes(args: argparse.Namespace, text: str, script: Script, options: TakeOptions,
                 link_factory: LinkFactory | None = None) -> TakesDone:
    """Give every sentence a chosen take: the missing ones rendered through the take pipeline
    (1-ahead, batched, the seed policy), then checked and retaken one by one through the same link."""
    # lazy: start-up (numpy, pyebur128, rich, scipy)
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    # lazy: start-up (numpy, pyebur128, rich, scipy)
    from omnistudio.console import progress_bar, status
    from omnistudio.projects.chosen import keep_rendered
    from omnistudio.projects.retake import pipeline_synth, take_sentences
    from omnistudio.take.pipeline import Take, plan

    if args.play:
        raise UserError("--project/--verify write a file from the chosen takes: use -o, not --play")
    checker = open_checker(args)
    project = open_project(args, text, options.lang, options.voice)
    planned = plan(script, options)
    if [(p.text, p.voice.key(), p.lang) for p in planned] != [(ln.text, ln.voice, ln.lang) for ln in project.lines]:
        raise UserError("the project and the script disagree on the sentences (internal)")
    project.speak([p.said for p in planned])  # a take is fresh for the text as spoken now (lexicon included)
    todo = project.missing()
    link: EngineLink | None = None
    if todo or (checker is not None and args.retake > 0):
        with status("loading model") as update:
            link = (link_factory or engine_link)(args, update)
    columns = (TextColumn("{task.fields[phase]}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.description}"))
    with progress_bar(*columns, transient=True) as bar:
        if todo:
            assert link is not None  # loaded above for the sentences to render
            task = bar.add_task("", total=len(todo), phase="rendering")
            first = Take(link, [planned[i] for i in todo], options).run(
                on_chunk=lambda chunk: bar.update(task, advance=1, description=f"sentence {chunk.sentence_id + 1}"))
            keep_rendered(project, [planned[i] for i in todo], first.chunks, options, first.engine)

        retaken: list[int] = []
        if checker is not None:
            check = bar.add_task("", total=len(project), phase="checking")
            retaken = take_sentences(  # retakes through the pipeline, like the studio's F9 (no link: none)
                project, pipeline_synth(project, planned, link, options),
                lambda i, line: planned[i].seed,
                num_step=options.num_step, guidance=options.guidance_scale, checker=checker, retakes=args.retake,
                progress=lambda msg: bar.update(check, description=msg),
                done=lambda i: bar.update(check, advance=1, description=f"sentence {i + 1}"))
    if args.project is not None:
        project.save()
    failed = [i for i, line in enumerate(project.lines) if line.failed]
    return {"project": project, "planned": planned, "link": link, "rendered": sorted(set(todo) | set(retaken)),
            "reused": len(project) - len(set(todo) | set(retaken)), "failed": failed}


def run(args: argparse.Namespace, text: str, script: Script, options: TakeOptions,
        link_factory: LinkFactory | None = None) -> int:
    """``render`` with --project/--verify: takes, then the file from the chosen takes (exit 1 when a
    chosen take still fails its check; the file is written all the same)."""

    # lazy: start-up (numpy, pyebur128, rich, scipy)
    from omnistudio.commands.flags.captions import caption_hearer, caption_options
    from omnistudio.console import err_console
    from omnistudio.projects.chosen import keep_words, write_chosen
    from omnistudio.projects.retake import takes_report

    started = time.perf_counter()
    captions = caption_options(args)
    hearer = caption_hearer(args, captions) if args.output is not None else None  # a bad --asr-model: first
    done = render_takes(args, text, script, options, link_factory)
    project = done["project"]
    result: dict[str, object] = {"output": str(args.output) if args.output else None,
                                 "project": str(args.project) if args.project else None,
                                 "rendered": done["rendered"], "reused": done["reused"], "failed": done["failed"],
                                 "total_s": round(time.perf_counter() - started, 3)}
    if args.output is not None:
        report = takes_report(project)
        finished, timed = write_chosen(project, done["planned"], options, args.output, captions, hearer)
        write_json(finished.sidecar_path, {**finished.sidecar, "takes": report})
        if args.project is not None and keep_words(project, timed):
            project.save()  # the words the captions measured, kept in the chosen takes
        result.update(sidecar=str(finished.sidecar_path), loudness=finished.sidecar.get("loudness"), takes=report)
    for index in done["failed"]:
        take = project.lines[index].chosen_take
        assert take is not None and take.asr is not None  # a failed sentence's chosen take failed its check
        err_console.print(f"omnistudio: sentence {index + 1} failed its check: {take.asr.describe()}",
                          markup=False, highlight=False, soft_wrap=True)
    if args.json:
        print(json.dumps(result))
    return 1 if done["failed"] else 0
