"""`omnistudio bench`: a thin dispatcher over the modes of :mod:`omnistudio.bench`.

Each mode is one module of that package owning its flags (``add_flags``), its runner (``run(args,
open_engine)``), its default ``--sentences`` (``DEFAULT_SENTENCES``) and its printer (``print_result``).
Here: the flags every mode shares, which mode the flags pick, the checks, the progress bar, and the
provenance block (commit, machine, load) every mode's output carries.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from omnistudio.bench import (
    compiled,
    dialogue,
    meter,
    remote,
    sentences,
    serve,
    serve_ray,
    speed,
    stream,
    stream_input,
    studio,
    vocoder,
)
from omnistudio.bench.modes import graph_failures
from omnistudio.bench.provenance import provenance, provenance_line
from omnistudio.bench.serve import clients_list
from omnistudio.errors import UserError
from omnistudio.flags.engine import add_model_options, add_server_options, engine_from_args
from omnistudio.flags.synthesis import add_synthesis_options

if TYPE_CHECKING:
    from omnistudio.engine.engine import Engine

__all__ = ["MODES", "add_parser", "clients_list", "run"]

MAX_SENTENCES = 50
MODES: dict[str, ModuleType] = {
    "sentences": sentences, "stream": stream, "stream-server": remote, "dialogue": dialogue, "meter": meter,
    "serve": serve, "lengths": compiled, "serve_ray": serve_ray, "vocoder": vocoder, "studio": studio,
    "stream-input": stream_input}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="measure the fast sampler against stock OmniVoice")
    modes = p.add_mutually_exclusive_group()
    for module in (stream, dialogue, meter, serve, compiled, vocoder, studio, stream_input):
        module.add_flags(p, modes)
    serve_ray.add_flags(p)
    p.add_argument("--sentences", default=None, help="sentences per variant (default 3; 40 with --stream, "
                   "8 with --dialogue, 6 paragraphs of the F5 script with --studio)")
    add_synthesis_options(p, "random seed (same for every variant)", sampler=False)
    speed.add_flags(p)
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    remote.add_flags(p)
    add_model_options(p)
    add_server_options(p)


def _mode(args: argparse.Namespace) -> str:
    mode = ("stream" if args.stream else "dialogue" if args.dialogue else "meter" if args.meter else
            "serve" if args.serve else "lengths" if args.lengths else "vocoder" if args.vocoder else
            "studio" if args.studio else "stream-input" if args.stream_input else "sentences")
    if args.dtypes and mode != "sentences":
        raise UserError("--dtypes compares sentence synthesis; it does not combine with --stream, --dialogue, "
                        "--meter, --serve, --lengths, --vocoder, --studio or --stream-input")
    if args.server and (mode != "stream" or args.ray):
        raise UserError("--server goes with --stream (this machine's engine against the server's)")
    if args.ray:
        return "serve_ray"
    return "stream-server" if args.server else mode


def run(args: argparse.Namespace) -> int:
    # lazy: looked up when called (tests replace it)
    from omnistudio.checks import check_batch, check_num_step, check_seed

    args.dtypes = speed.dtypes_list(args.dtypes)
    mode = _mode(args)
    if mode == "serve_ray":
        serve_ray.check(args)
        args.clients = clients_list(args.clients)
    if mode == "serve":
        serve.check(args)
    module = MODES[mode]
    if args.sentences is None:
        args.sentences = module.DEFAULT_SENTENCES
    try:
        args.sentences = int(str(args.sentences))
    except ValueError:
        raise UserError(f"--sentences must be a whole number, got '{args.sentences}'") from None
    if not 1 <= args.sentences <= MAX_SENTENCES:
        raise UserError(f"--sentences {args.sentences} is out of range 1..{MAX_SENTENCES}")
    check_batch(args.batch, "--batch", lo=2)
    args.num_step = check_num_step(args.num_step)
    args.seed = check_seed(args.seed)
    if args.threads is not None and args.threads < 1:
        raise UserError(f"--threads must be at least 1, got {args.threads}")
    args.variants = {"combined": ["lossless", "default"], "graphs": ["steps"]}.get(
        args.only, ["techniques", "lossless", "default"])
    if args.threads:
        # lazy: start-up (torch)
        import torch

        torch.set_num_threads(args.threads)
    result = _with_progress(args, lambda a: module.run(a, _open))
    result["mode"] = mode
    measured = provenance()
    result["provenance"] = measured
    if args.json:
        print(json.dumps(result))
    else:
        module.print_result(result)
        print(provenance_line(measured))
    failed = graph_failures(result)
    if failed:  # the figures above are of the eager step where a graph was meant to replay
        print(f"bench: {failed} step graph capture(s) failed (those shapes ran eagerly)", file=sys.stderr)
        return 1
    return 0


def _open(args: argparse.Namespace, sampler: str = "stock") -> Engine:
    args.sampler = sampler
    args.progress(0, 1, "loading model")
    return engine_from_args(args)


def _with_progress(args: argparse.Namespace,
                   runner: Callable[[argparse.Namespace], dict[str, object]]) -> dict[str, object]:
    # lazy: start-up (rich)
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from omnistudio.console import progress_bar

    with progress_bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True) as bar:
        task = bar.add_task("bench", total=1)

        def progress(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=label)

        args.progress = progress
        return runner(args)
