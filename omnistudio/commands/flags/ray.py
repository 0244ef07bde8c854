"""The ``--ray`` options of ``render`` and ``serve`` and their glue to :mod:`omnistudio.cluster`.

Only the option definitions live here unconditionally; Ray is imported when ``--ray`` is given
(and a missing Ray is one line saying how to install it).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from omnistudio.errors import UserError


def add_address_option(group: Any) -> None:
    group.add_argument("--address", default=None, help="Ray cluster: auto (the one this machine joined), "
                       "ray://HOST:10001 or HOST:6379 (default: a private local instance)")


def add_batch_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("many scripts on Ray (pip install 'omnistudio[ray]')")
    group.add_argument("--ray", action="store_true", help="render every SCRIPT on Ray actors that each hold "
                       "an engine; writes DIR/NAME.wav + NAME.wav.json, skipping scripts already done")
    group.add_argument("--out-dir", type=Path, default=None, help="folder for the outputs of --ray")
    add_address_option(group)
    group.add_argument("--workers", type=int, default=None, help="actors, each with its own engine "
                       "(default: one per GPU of the cluster, else 1)")
    group.add_argument("--gpus-per-worker", type=float, default=None, help="GPUs each worker holds "
                       "(default: 1 when the cluster has GPUs, else 0)")
    group.add_argument("--cpus-per-worker", type=float, default=1.0, help="CPUs each worker holds (default 1)")


def _batch_spec(args: argparse.Namespace) -> Any:
    """The batch's spec from the render command's own option checks (default voice still unset)."""
    from omnistudio.cluster.batch import RenderSpec
    from omnistudio.commands.take_args import take_options
    from omnistudio.config import default_model

    if args.output is not None:
        raise UserError("--ray writes into --out-dir DIR (one NAME.wav per script), not -o")
    if args.play:
        raise UserError("--ray renders files only: --play works without --ray")
    if getattr(args, "shm", None):
        raise UserError("--shm hands one take to one reader: it does not combine with --ray")
    options = take_options(args)
    ref_bytes = args.ref_audio.read_bytes() if args.ref_audio is not None and args.ref_audio.is_file() else None
    return RenderSpec(model=args.model or default_model(), device=args.device, dtype=args.dtype,
                      sampler=args.sampler, options=options, ref_bytes=ref_bytes)


def run_batch(args: argparse.Namespace) -> int:
    """``render SCRIPT... --out-dir DIR --ray``: every check before Ray starts, then the batch."""
    from omnistudio.cluster.batch import plan_jobs, split_done
    from omnistudio.cluster.connect import Need, import_ray
    from omnistudio.commands.take_args import plan_script
    from omnistudio.console import err_console

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
        jobs[i] = replace(job, parsed=script)
        spec = replace(spec, options=options)  # the default voice (the same for every script)
    if args.out_dir.exists() and not args.out_dir.is_dir():
        raise UserError(f"--out-dir {args.out_dir} is not a folder")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    todo, report = split_done(jobs, spec)
    if todo:
        report = _render_on_ray(args, spec, todo, report)
    for name, reason in report.failed.items():
        err_console.print(f"omnistudio: {name}: {reason}", markup=False, highlight=False, soft_wrap=True)
    summary = (f"{len(report.rendered)} rendered, {len(report.skipped)} skipped (already done), "
               f"{len(report.failed)} failed; {report.audio_s:.1f} s of audio in {report.wall_s:.1f} s")
    if args.json:
        print(json.dumps({"out_dir": str(args.out_dir), "rendered": report.rendered, "skipped": report.skipped,
                          "failed": report.failed, "audio_s": round(report.audio_s, 3),
                          "wall_s": round(report.wall_s, 3)}))
    else:
        err_console.print(summary, markup=False, highlight=False)
    if report.failed:
        raise UserError(f"{len(report.failed)} of {len(jobs)} scripts failed: {', '.join(report.failed)}")
    return 0


def _render_on_ray(args: argparse.Namespace, spec: Any, todo: list[Any], report: Any) -> Any:
    from omnistudio.cluster.batch import render_batch
    from omnistudio.cluster.connect import Cluster, Need
    from omnistudio.console import err_console

    with Cluster(args.address) as cluster:
        have = cluster.resources()
        gpus = args.gpus_per_worker if args.gpus_per_worker is not None else (1.0 if have.get("GPU") else 0.0)
        workers = args.workers or (max(1, int(have.get("GPU", 0) // gpus)) if gpus else 1)
        cluster.check_fits(Need(workers, args.cpus_per_worker, gpus, "workers"))
        return render_batch(cluster.ray, spec, todo, workers, args.cpus_per_worker, gpus, console=err_console,
                            report=report)


# ------------------------------------------------------------------- serve --ray
RAY_ONLY = ("replicas", "gpus_per_replica", "cpus_per_replica", "min_replicas", "max_replicas", "address")


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scale-out on Ray Serve (pip install 'omnistudio[ray]')")
    group.add_argument("--ray", action="store_true", help="serve the same app as a Ray Serve deployment: "
                       "one engine per replica, Serve's proxy on --host/--port routes and streams")
    add_address_option(group)
    group.add_argument("--replicas", type=int, default=None, help="replicas, each with its own engine (default 1)")
    group.add_argument("--gpus-per-replica", type=float, default=None, help="GPUs each replica holds "
                       "(default: 1 when the cluster has GPUs, else 0)")
    group.add_argument("--cpus-per-replica", type=float, default=None, help="CPUs each replica holds (default 1)")
    group.add_argument("--min-replicas", type=int, default=None, help="autoscaling floor (with --max-replicas)")
    group.add_argument("--max-replicas", type=int, default=None, help="autoscaling ceiling (with --min-replicas)")


def check_serve_options(args: argparse.Namespace) -> None:
    """Without --ray, the Ray options are a mistake worth one line."""
    if not args.ray:
        given = [name for name in RAY_ONLY if getattr(args, name, None) is not None]
        if given:
            raise UserError(f"--{given[0].replace('_', '-')} needs --ray")


def run_serve(args: argparse.Namespace, keys: tuple[bytes, ...]) -> int:
    """``serve --ray``: deploy, print where, serve until Ctrl+C, then take the deployment down."""
    import time

    from omnistudio.cluster import serve as cluster_serve
    from omnistudio.cluster.connect import Cluster, Need, import_serve
    from omnistudio.console import err_console

    import_serve()
    scale_args = dict(replicas=1 if args.replicas is None else args.replicas,
                      cpus=1.0 if args.cpus_per_replica is None else args.cpus_per_replica,
                      gpus=args.gpus_per_replica or 0.0, min_replicas=args.min_replicas,
                      max_replicas=args.max_replicas, host=args.host, port=args.port)
    cluster_serve.Scale(**scale_args)  # every value checked before Ray starts (the port: by the caller)
    config = cluster_serve.ReplicaConfig(model=args.model, device=args.device, dtype=args.dtype,
                                         max_batch=args.max_batch, max_queue=args.max_queue,
                                         time_limit_s=args.time_limit, keys=keys, warm_up=args.warm_up,
                                         threads=max(1, int(scale_args["cpus"])))
    cluster = Cluster(args.address)
    try:
        if args.gpus_per_replica is None and cluster.resources().get("GPU") and args.device != "cpu":
            scale_args["gpus"] = 1.0
        scale = cluster_serve.Scale(**scale_args)
        cluster.check_fits(Need(scale.first, scale.cpus, scale.gpus))
    except BaseException:
        cluster.close()  # nothing was deployed: leave nothing running
        raise
    try:
        with err_console.status(f"starting {scale.first} replicas"):
            url = cluster_serve.start(cluster, config, scale)
        err_console.print(f"omnistudio: serving on {url} with {scale.first} replicas "
                          f"({scale.cpus:g} CPU, {scale.gpus:g} GPU each); Ctrl+C stops", markup=False,
                          highlight=False)
        while True:
            time.sleep(1.0)
    finally:
        cluster_serve.stop(cluster)
