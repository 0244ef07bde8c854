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
    from omnistudio.bench.speed import Bench, BenchSettings

    settings = BenchSettings(sentences=args.sentences, num_step=args.num_step, seed=args.seed,
                             guidance=args.guidance, variants=args.variants, compile=args.compile)
    engine = _open(args)
    return Bench(engine, settings, progress=args.progress).run()


def _stream(args: argparse.Namespace) -> Any:
    from omnistudio.bench.stream import stream_benchmark

    engine = _open(args, sampler="fast")
    args.progress(0, 1, f"streaming {args.sentences} sentences")
    return stream_benchmark(engine, n_sentences=args.sentences, num_step=args.num_step, seed=args.seed)


def _dialogue(args: argparse.Namespace) -> Any:
    from omnistudio.bench.dialogue import dialogue_benchmark
    from omnistudio.bench.stream import bench_voice

    engine = _open(args, sampler="fast")
    voices = [bench_voice(engine, 3.0), bench_voice(engine, 4.0)]
    args.progress(0, 1, f"dialogue: {args.sentences} lines, sequential vs batches of {args.batch}")
    return dialogue_benchmark(engine, voices, batch=args.batch, lines=args.sentences, num_step=args.num_step,
                              seed=args.seed)


def _serve(args: argparse.Namespace) -> Any:
    from omnistudio.bench.serve import serve_benchmark

    engine = _open(args, sampler="fast")
    return serve_benchmark(engine, args.clients, requests=args.sentences, num_step=args.num_step,
                           max_batch=args.max_batch, progress=args.progress)


def clients_list(value: str) -> list[int]:
    try:
        counts = [int(v) for v in str(value).split(",") if v.strip()]
    except ValueError:
        raise UserError(f"--clients '{value}' must be numbers separated by commas, e.g. 1,4,8") from None
    if not counts or any(not 1 <= c <= 64 for c in counts):
        raise UserError(f"--clients '{value}': each count must be in 1..64")
    return sorted(set(counts))


def _meter(args: argparse.Namespace) -> Any:
    from omnistudio.audio.loudness import meter_benchmark

    return meter_benchmark()


def _serve_ray(args: argparse.Namespace) -> Any:
    from omnistudio.cluster.bench import ServeBench, serve_ray_benchmark

    bench = ServeBench(replicas=args.replicas, requests=args.sentences, concurrency=max(args.clients),
                       num_step=args.num_step, model=args.model, device=args.device, address=args.address)
    return serve_ray_benchmark(bench, progress=args.progress)


MODES: dict[str, Callable[[argparse.Namespace], Any]] = {
    "sentences": _sentences, "stream": _stream, "dialogue": _dialogue, "meter": _meter, "serve": _serve,
    "serve_ray": _serve_ray}
DEFAULT_SENTENCES = {"sentences": 3, "stream": 40, "dialogue": 8, "meter": 1, "serve": 8, "serve_ray": 8}


def add_parser(sub: argparse._SubParsersAction) -> None:
    from omnistudio.cli import add_model_options

    p = sub.add_parser("bench", help="measure the fast sampler against stock OmniVoice")
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--stream", action="store_true", help="TTFA vs whole-script time of a streamed script "
                       "(default 40 sentences)")
    modes.add_argument("--dialogue", action="store_true", help="batched vs sequential dialogue throughput "
                       "(default 8 lines)")
    modes.add_argument("--meter", action="store_true", help="cost of the live loudness meter per 100 ms block")
    modes.add_argument("--serve", action="store_true", help="speech server: throughput and TTFA p50/p95 per "
                       "client count, cross-request batching off vs on (--sentences = requests, default 8)")
    p.add_argument("--clients", default="1,4,8", help="--serve: concurrent client counts (default 1,4,8)")
    p.add_argument("--max-batch", type=int, default=8, help="--serve: batch size when batching is on (default 8)")
    p.add_argument("--ray", action="store_true", help="with --serve: requests per second through Ray Serve for each "
                   "--replicas count (pip install 'omnistudio[ray]')")
    p.add_argument("--replicas", default="1,2", help="with --serve --ray: replica counts to compare (default 1,2)")
    p.add_argument("--address", default=None, help="with --serve --ray: Ray cluster (auto, ray://HOST:10001; "
                   "default: a local instance)")
    p.add_argument("--batch", type=int, default=2, help="dialogue batch size (default 2)")
    p.add_argument("--sentences", default=None, help="sentences per variant (default 3; 40 with --stream, "
                   "8 with --dialogue)")
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
    from omnistudio.checks import check_num_step, check_seed

    mode = ("stream" if args.stream else "dialogue" if args.dialogue else "meter" if args.meter else
            "serve" if args.serve else "sentences")
    if args.ray:
        mode = "serve_ray"
        _check_serve_ray(args)
    if mode in ("serve", "serve_ray"):
        args.clients = clients_list(args.clients)
    if mode == "serve":
        if not 2 <= args.max_batch <= 16:
            raise UserError(f"--max-batch {args.max_batch} is out of range 2..16")
    if args.sentences is None:
        args.sentences = DEFAULT_SENTENCES[mode]
    try:
        args.sentences = int(str(args.sentences))
    except ValueError:
        raise UserError(f"--sentences must be a whole number, got '{args.sentences}'") from None
    if not 1 <= args.sentences <= MAX_SENTENCES:
        raise UserError(f"--sentences {args.sentences} is out of range 1..{MAX_SENTENCES}")
    if not 2 <= args.batch <= 16:
        raise UserError(f"--batch {args.batch} is out of range 2..16")
    args.num_step = check_num_step(args.num_step)
    args.seed = check_seed(args.seed)
    if args.threads is not None and args.threads < 1:
        raise UserError(f"--threads must be at least 1, got {args.threads}")
    args.variants = ["lossless", "default"] if args.only == "combined" else ["techniques", "lossless", "default"]
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    result = _with_progress(args, MODES[mode])
    result["mode"] = mode
    if args.json:
        print(json.dumps(result))
    elif mode == "serve_ray":
        print_serve_ray(result)
    elif mode == "sentences":
        print_table(result)
    elif mode == "serve":
        print_serve(result)
    else:
        print_summary(mode, result)
    return 0


def _check_serve_ray(args: argparse.Namespace) -> None:
    if not (args.serve and args.ray):
        raise UserError("the serve benchmark runs on Ray: give --serve --ray together")
    from omnistudio.cluster.connect import import_serve

    import_serve()
    try:
        args.replicas = tuple(int(n) for n in str(args.replicas).split(","))
    except ValueError:
        raise UserError(f"--replicas '{args.replicas}' must be counts separated by commas, e.g. 1,2") from None
    if not args.replicas or min(args.replicas) < 1:
        raise UserError(f"--replicas counts must be at least 1, got {args.replicas}")


def _open(args: argparse.Namespace, sampler: str = "stock") -> Any:
    from omnistudio.commands.voice_args import engine_from_args

    args.sampler = sampler  # "stock": the sentence bench installs its own samplers per variant
    args.progress(0, 1, "loading model")
    return engine_from_args(args)


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


SUMMARY_LINES = {
    "stream": "TTFA {ttfa_s:.3f} s, whole script {total_s:.2f} s ({sentences} sentences, {audio_s:.1f} s of audio), "
              "TTFA / whole = {ttfa_ratio}",
    "dialogue": "{lines} lines: sequential {sequential_s:.2f} s, batched (x{batch}) {batched_s:.2f} s -> "
                "throughput ratio {throughput_ratio:.2f}x (max |diff| {max_abs_diff:.3g})",
    "meter": "live loudness meter at {sample_rate} Hz: {per_block_ms:.4f} ms per {block_ms:.0f} ms block "
             "(momentary, short-term, integrated, sample peak), {per_block_ms_with_true_peak:.4f} ms with true "
             "peak; a whole {whole_signal_s:.0f} s signal in {whole_signal_ms:.1f} ms",
}


def print_summary(mode: str, result: dict[str, Any]) -> None:
    where = f"{result['model']} on {result['device']}: " if "model" in result else ""
    print(where + SUMMARY_LINES[mode].format(**result))


def print_serve(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"serve: {result['model']} on {result['device']}, {result['requests']} requests, "
                  f"{result['num_step']} steps, max batch {result['max_batch']}")
    for col in ("batching", "clients", "throughput (audio s / s)", "ratio", "TTFA p50 s", "TTFA p95 s", "mean batch"):
        table.add_column(col, justify="right")
    for r in result["rows"]:
        table.add_row(r["batching"], str(r["clients"]), f"{r['throughput']:.3f}", f"{r['throughput_ratio']:.2f}x",
                      f"{r['ttfa_p50_s']:.3f}", f"{r['ttfa_p95_s']:.3f}", str(r["mean_batch"]))
    Console().print(table)


def print_serve_ray(result: dict[str, Any]) -> None:
    print(f"{result['model']} on {result['device']}, {result['cpus_per_replica']:g} CPU + "
          f"{result['gpus_per_replica']:g} GPU per replica, {result['concurrency']} clients, "
          f"{result['num_step']} steps:")
    for run in result["runs"]:
        print(f"  {run['replicas']} replicas: {run['requests']} requests in {run['wall_s']:.2f} s -> "
              f"{run['requests_per_s']:.3f} req/s, {run['audio_s_per_s']:.2f} s of audio per s "
              f"({run['ratio']:.2f}x; {run['replicas_answering']} replicas answered)")
