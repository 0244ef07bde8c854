"""``render SCRIPT... --out-dir DIR --ray``: many scripts rendered on Ray actors that each hold an engine
(the flags: :mod:`omnistudio.commands.flags.ray`). Ray is imported only when ``--ray`` is given."""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import replace
from typing import TYPE_CHECKING

from omnistudio.cluster.connect import Need, import_ray
from omnistudio.commands.flags.ray import actor_threads, local_threads
from omnistudio.commands.flags.take import plan_script, take_options
from omnistudio.config import default_model
from omnistudio.errors import UserError
from omnistudio.flags.engine import engine_config

if TYPE_CHECKING:
    from omnistudio.captions.formats import CaptionOptions
    from omnistudio.cluster.batch import BatchReport, RenderSpec, ScriptJob
    from omnistudio.script import Script
    from omnistudio.take.options import TakeOptions
    from omnistudio.voices.align import Hearer


def _batch_spec(args: argparse.Namespace) -> RenderSpec:
    """The batch's spec from the render command's own option checks (default voice still unset)."""
    # lazy: start-up (the model stack: omnistudio.engine.model and what it loads)
    from omnistudio.engine.model import pick_device

    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.cluster.batch import RenderSpec

    if args.output is not None:
        raise UserError("--ray writes into --out-dir DIR (one NAME.wav per script), not -o")
    if args.play:
        raise UserError("--ray renders files only: --play works without --ray")
    if getattr(args, "shm", None):
        raise UserError("--shm hands one take to one reader: it does not combine with --ray")

    engine = engine_config(args, model=args.model or default_model(),
                           threads=actor_threads(args.threads_per_worker, "--threads-per-worker"))
    if engine.quantize != "none":  # refused (one line) where int8 would not run, before Ray starts
        # lazy: start-up (torch)
        from omnistudio.engine.quantize import check_quantize

        check_quantize(engine.quantize, pick_device(engine.device))
    options = take_options(args)
    ref_bytes = args.ref_audio.read_bytes() if args.ref_audio is not None and args.ref_audio.is_file() else None
    return RenderSpec(engine=engine, options=options, ref_bytes=ref_bytes)


def spoken_digest(script: Script, options: TakeOptions) -> str:
    """sha256 of what the model is asked to say for every sentence of ``script`` (the take's plan)."""

    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.pipeline import plan

    said = "\n".join(sentence.said for sentence in plan(script, options))
    return hashlib.sha256(said.encode("utf-8")).hexdigest()


def refuse_takes(args: argparse.Namespace) -> None:
    """--project, --verify and --retake keep and check takes sentence by sentence (``render_takes``):
    a batch renders whole scripts on workers and keeps no takes, so it refuses them before anything
    starts rather than ignoring them (docs/decisions.md, 2026-12-04)."""
    flag = ("--project" if args.project is not None else "--verify" if args.verify
            else "--retake" if args.retake else None)
    if flag is not None:
        raise UserError(f"{flag} does not combine with --ray/--out-dir: a batch renders whole scripts and keeps "
                        f"no takes; render one script with {flag} -o OUT.wav, without --ray")


def run_batch(args: argparse.Namespace, captions: CaptionOptions | None = None) -> int:
    """``render SCRIPT... --out-dir DIR --ray``: every check before Ray starts, then the batch;
    ``captions`` (checked options): NAME.srt / NAME.vtt beside each NAME.wav, as ``render -o --captions``."""
    # lazy: start-up (numpy, pyebur128, rich, scipy)
    from omnistudio.cluster.batch import plan_jobs, split_done
    from omnistudio.console import err_console

    refuse_takes(args)
    if not args.ray:
        raise UserError("--out-dir renders many scripts on Ray: add --ray (pip install 'omnistudio[ray]')")
    if args.out_dir is None:
        raise UserError("--ray needs --out-dir DIR for the outputs")
    import_ray()
    spec = _batch_spec(args)
    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers must be at least 1, got {args.workers}")
    Need(1, args.cpus_per_worker, args.gpus_per_worker or 0.0, "workers")  # the cheap checks of each value
    jobs = plan_jobs(args.scripts, args.out_dir)
    for i, job in enumerate(jobs):  # every script parsed and checked before anything starts
        try:
            script, options = plan_script(args, job.text, spec.options)
        except UserError as exc:
            raise UserError(f"{job.script}: {exc}") from None
        jobs[i] = replace(job, parsed=script, spoken_sha256=spoken_digest(script, options))
        spec = replace(spec, options=options)  # the default voice (the same for every script)
    if args.out_dir.exists() and not args.out_dir.is_dir():
        raise UserError(f"--out-dir {args.out_dir} is not a folder")
    # lazy: start-up (numpy)
    from omnistudio.commands.flags.captions import caption_hearer

    hearer = caption_hearer(args, captions)  # a bad --asr-model before Ray; the words are heard here, not on workers
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if captions is not None:
        # lazy: start-up (numpy, pyebur128, scipy)
        from omnistudio.take.captions import caption_paths, check_caption_paths

        for job in jobs:
            check_caption_paths(caption_paths(job.output, captions.formats), {"the script": job.script})
    todo, report = split_done(jobs, spec, captions)
    if todo:
        report = _render_on_ray(args, spec, todo, report, captions, hearer)
    for name, reason in report.failed.items():
        err_console.print(f"omnistudio: {name}: {reason}", markup=False, highlight=False, soft_wrap=True)
    here = local_threads()
    summary = (f"{len(report.rendered)} rendered, {len(report.skipped)} skipped (already done), "
               f"{len(report.failed)} failed; {report.audio_s:.1f} s of audio in {report.wall_s:.1f} s")
    same = spec.threads == here
    if not same:
        summary += (f"; workers ran {spec.threads} torch threads, render here runs {here}: the files may differ "
                    "from a local render")
    if args.json:
        print(json.dumps({"out_dir": str(args.out_dir), "rendered": report.rendered, "skipped": report.skipped,
                          "failed": report.failed, "audio_s": round(report.audio_s, 3),
                          "wall_s": round(report.wall_s, 3), "threads": spec.threads, "local_threads": here,
                          "same_as_local_render": same}))
    else:
        err_console.print(summary, markup=False, highlight=False)
    if report.failed:
        raise UserError(f"{len(report.failed)} of {len(jobs)} scripts failed: {', '.join(report.failed)}")
    return 0


def _render_on_ray(args: argparse.Namespace, spec: RenderSpec, todo: list[ScriptJob], report: BatchReport,
                   captions: CaptionOptions | None = None, hearer: Hearer | None = None) -> BatchReport:
    # lazy: start-up (numpy, pyebur128, rich, scipy); looked up when called (tests replace it)
    from omnistudio.cluster.batch import render_batch
    from omnistudio.cluster.connect import Cluster, Need
    from omnistudio.console import err_console

    with Cluster(args.address) as cluster:
        have = cluster.resources()
        gpus = args.gpus_per_worker if args.gpus_per_worker is not None else (1.0 if have.get("GPU") else 0.0)
        workers = args.workers or (max(1, int(have.get("GPU", 0) // gpus)) if gpus else 1)
        cluster.check_fits(Need(workers, args.cpus_per_worker, gpus, "workers"))
        return render_batch(cluster.ray, spec, todo, workers, args.cpus_per_worker, gpus, console=err_console,
                            report=report, local_threads=local_threads(), captions=captions, hearer=hearer)
