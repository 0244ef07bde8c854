"""`omnistudio bench`: stock OmniVoice vs the fast sampler on the same model, inputs and seed.

Modes are entries of ``MODES`` (name -> runner); the default mode benchmarks
sentence synthesis. Later modes (e.g. ``--stream``, ``--dialogue``) add a flag
in ``add_parser`` and an entry in ``MODES``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from omnistudio.errors import UserError

MAX_SENTENCES = 50


def _sentences(args: argparse.Namespace) -> Any:
    from omnistudio.engine.bench import Bench, BenchSettings

    settings = BenchSettings(sentences=args.sentences, num_step=args.num_step, seed=args.seed,
                             guidance=args.guidance, variants=args.variants, compile=args.compile)
    engine = _open(args)
    return Bench(engine, settings, progress=args.progress).run()


MODES: dict[str, Callable[[argparse.Namespace], Any]] = {"sentences": _sentences}


def add_parser(sub: argparse._SubParsersAction) -> None:
    from omnistudio.cli import add_model_options

    p = sub.add_parser("bench", help="measure the fast sampler against stock OmniVoice")
    p.add_argument("--sentences", default=3, help="sentences per variant (default 3)")
    p.add_argument("--num-step", default=10, help="diffusion steps (default 10)")
    p.add_argument("--seed", default=0, help="random seed (same for every variant)")
    p.add_argument("--guidance", type=float, default=2.0, help="classifier-free guidance scale")
    p.add_argument("--only", choices=["all", "combined"], default="all",
                   help="all: each technique alone + lossless + defaults; combined: lossless + defaults")
    p.add_argument("--compile", choices=["off", "default", "reduce-overhead"], default="off",
                   help="also measure the defaults with torch.compile of backbone and vocoder")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    add_model_options(p)


def run(args: argparse.Namespace) -> int:
    from omnistudio.engine.engine import check_num_step, check_seed

    try:
        args.sentences = int(str(args.sentences))
    except ValueError:
        raise UserError(f"--sentences must be a whole number, got '{args.sentences}'") from None
    if not 1 <= args.sentences <= MAX_SENTENCES:
        raise UserError(f"--sentences {args.sentences} is out of range 1..{MAX_SENTENCES}")
    args.num_step = check_num_step(args.num_step)
    args.seed = check_seed(args.seed)
    if args.threads is not None and args.threads < 1:
        raise UserError(f"--threads must be at least 1, got {args.threads}")
    args.variants = ["lossless", "default"] if args.only == "combined" else ["techniques", "lossless", "default"]
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    mode = "sentences"
    result = _with_progress(args, MODES[mode])
    result["mode"] = mode
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
    return 0


def _open(args: argparse.Namespace) -> Any:
    from omnistudio.engine.session import open_engine

    args.sampler = "stock"  # the bench installs its own samplers per variant
    args.progress(0, 1, "loading model")
    return open_engine(args)


def _with_progress(args: argparse.Namespace, runner: Callable[[argparse.Namespace], Any]) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from omnistudio.console import err_console

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as bar:
        task = bar.add_task("bench", total=1)

        def progress(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=label)

        args.progress = progress
        return runner(args)


def print_table(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{result['model']} on {result['device']} ({result['dtype']}, "
                  f"{result['torch_threads']} threads, {result['num_step']} steps)")
    for col in ("variant", "ratio", "step ratio", "loop ratio", "ms/step", "vocoder ms", "RTF", "TTFA s", "peak MB",
                "tokens = stock", "max |diff|"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for v in result["variants"]:
        table.add_row(v["name"], f"{v['ratio']:.2f}x", f"{v['step_ratio']:.2f}x", f"{v['loop_ratio']:.2f}x", f"{v['ms_per_step']:.1f}",
                      f"{v['vocoder_ms']:.0f}", f"{v['rtf']:.2f}", f"{v['ttfa_s']:.2f}", f"{v['peak_mem_mb']:.0f}",
                      "yes" if v["tokens_identical"] else "NO", f"{v['max_abs_diff']:.3g}")
    Console().print(table)
    frames = ", ".join(f"{s['text_tokens']} text tokens / {s['target_frames']} frames" for s in result["sentences"])
    Console().print(f"inputs: reference {result['reference_frames']} frames; {frames}; compile {result['compile']}")
