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
    from omnistudio.checks import check_guidance

    args.guidance = check_guidance(args.guidance)
    settings = BenchSettings(sentences=args.sentences, num_step=args.num_step, seed=args.seed,
                             guidance=args.guidance, variants=args.variants, compile=args.compile)
    if args.dtypes:  # one engine per dtype, every variant at each
        engines = {}
        for dtype in args.dtypes:
            engines[dtype] = _open(argparse.Namespace(**{**vars(args), "dtype": dtype}))
        return Bench(engines, settings, progress=args.progress).run()
    engine = _open(args)
    return Bench(engine, settings, progress=args.progress).run()


def _lengths(args: argparse.Namespace) -> Any:
    from omnistudio.bench.compiled import length_sweep

    engine = _open(args, sampler="fast")
    return length_sweep(engine, sentences=args.sentences, mode=args.compile if args.compile != "off" else "default",
                        num_step=args.num_step, seed=args.seed, progress=args.progress)


def _stream(args: argparse.Namespace) -> Any:
    from omnistudio.bench.stream import stream_benchmark

    if getattr(args, "server", None):
        return _remote_stream(args)
    engine = _open(args, sampler="fast")
    args.progress(0, 1, f"streaming {args.sentences} sentences")
    return stream_benchmark(engine, n_sentences=args.sentences, num_step=args.num_step, seed=args.seed)


def _remote_stream(args: argparse.Namespace) -> Any:
    """--stream --server URL: the same take through this machine's engine and the server's, in one run."""
    from omnistudio.bench.remote import remote_stream_benchmark
    from omnistudio.commands.flags.engine import remote_link
    from omnistudio.take.link import LocalEngine

    remote = remote_link(args.server, args.api_key_file)
    args.progress(0, 2, f"connecting to {remote.address}")
    info = remote.wait_ready(lambda text: args.progress(0, 2, text))
    args.model = args.model or info.model  # the local run: the server's model unless --model says otherwise
    local = LocalEngine(_open(args, sampler="fast"))
    result = remote_stream_benchmark(local, remote, n_sentences=args.sentences, voice=args.voice,
                                     num_step=args.num_step, seed=args.seed, progress=args.progress)
    return {"model": f"{local.info.model} here / {info.model} on the server", "device": result["remote"]["device"],
            **result}


def _dialogue(args: argparse.Namespace) -> Any:
    from omnistudio.bench.dialogue import dialogue_benchmark
    from omnistudio.bench.stream import bench_voice

    engine = _open(args, sampler="fast")
    voices = [bench_voice(engine, 3.0), bench_voice(engine, 4.0)]
    args.progress(0, 1, f"dialogue: {args.sentences} lines, sequential vs batches of {args.batch}")
    return dialogue_benchmark(engine, voices, batch=args.batch, lines=args.sentences, num_step=args.num_step,
                              seed=args.seed)


def _serve(args: argparse.Namespace) -> Any:
    from omnistudio.server.bench import serve_benchmark

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
    from omnistudio.bench.meter import meter_benchmark

    return meter_benchmark()


def _serve_ray(args: argparse.Namespace) -> Any:
    from omnistudio.cluster.bench import ServeBench, serve_ray_benchmark

    bench = ServeBench(replicas=args.replicas, requests=args.sentences, concurrency=max(args.clients),
                       num_step=args.num_step, model=args.model, device=args.device, address=args.address)
    return serve_ray_benchmark(bench, progress=args.progress)


MODES: dict[str, Callable[[argparse.Namespace], Any]] = {
    "sentences": _sentences, "stream": _stream, "dialogue": _dialogue, "meter": _meter, "serve": _serve,
    "lengths": _lengths, "serve_ray": _serve_ray}
DEFAULT_SENTENCES = {"sentences": 3, "stream": 40, "stream-server": 12, "dialogue": 8, "meter": 1, "serve": 8,
                     "lengths": 20, "serve_ray": 8}


def add_parser(sub: argparse._SubParsersAction) -> None:
    from omnistudio.commands.flags.engine import add_model_options, add_server_options
    from omnistudio.commands.flags.synthesis import add_synthesis_options

    p = sub.add_parser("bench", help="measure the fast sampler against stock OmniVoice")
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--stream", action="store_true", help="TTFA vs whole-script time of a streamed script "
                       "(default 40 sentences); with --server, this machine's engine against the server's, "
                       "same take (default 12 sentences)")
    modes.add_argument("--dialogue", action="store_true", help="batched vs sequential dialogue throughput "
                       "(default 8 lines)")
    modes.add_argument("--meter", action="store_true", help="cost of the live loudness meter per 100 ms block")
    modes.add_argument("--serve", action="store_true", help="speech server: throughput and TTFA p50/p95 per "
                       "client count, cross-request batching off vs on (--sentences = requests, default 8)")
    p.add_argument("--clients", default="1,4,8", help="--serve: concurrent client counts (default 1,4,8)")
    p.add_argument("--max-batch", type=int, default=8, help="--serve: batch size when batching is on (default 8)")
    modes.add_argument("--lengths", action="store_true", help="sentences of distinct lengths through the compiled "
                       "backbone and vocoder after warm-up: recompilations, vocoder time vs eager (default 20)")
    p.add_argument("--ray", action="store_true", help="with --serve: requests per second through Ray Serve for each "
                   "--replicas count (pip install 'omnistudio[ray]')")
    p.add_argument("--replicas", default="1,2", help="with --serve --ray: replica counts to compare (default 1,2)")
    p.add_argument("--address", default=None, help="with --serve --ray: Ray cluster (auto, ray://HOST:10001; "
                   "default: a local instance)")
    p.add_argument("--batch", type=int, default=2, help="dialogue batch size (default 2)")
    p.add_argument("--sentences", default=None, help="sentences per variant (default 3; 40 with --stream, "
                   "8 with --dialogue)")
    add_synthesis_options(p, "random seed (same for every variant)", sampler=False)
    p.add_argument("--only", choices=["all", "combined"], default="all",
                   help="all: each technique alone + lossless + defaults; combined: lossless + defaults")
    p.add_argument("--compile", choices=["off", "default", "reduce-overhead"], default="off",
                   help="also measure the defaults with torch.compile of backbone and vocoder")
    p.add_argument("--dtypes", help="comma-separated backbone dtypes to compare in one run, e.g. fp32,bf16 "
                   "(one engine each; stock and fast at each dtype; ratios against stock at the first)")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--voice", default="ruby", help="--stream --server: the anchor (or a+b@alpha) both runs "
                   "speak with (default ruby)")
    add_model_options(p)
    add_server_options(p)


def run(args: argparse.Namespace) -> int:
    from omnistudio.checks import check_batch, check_num_step, check_seed

    mode = ("stream" if args.stream else "dialogue" if args.dialogue else "meter" if args.meter else
            "serve" if args.serve else "lengths" if args.lengths else "sentences")
    args.dtypes = _dtypes(args.dtypes)
    if args.dtypes and mode != "sentences":
        raise UserError("--dtypes compares sentence synthesis; it does not combine with --stream, --dialogue, "
                        "--meter, --serve or --lengths")
    if args.ray:
        mode = "serve_ray"
        _check_serve_ray(args)
    if mode in ("serve", "serve_ray"):
        args.clients = clients_list(args.clients)
    if mode == "serve":
        check_batch(args.max_batch, "--max-batch", lo=2)
    if args.server and mode != "stream":
        raise UserError("--server goes with --stream (this machine's engine against the server's)")
    if args.sentences is None:
        args.sentences = DEFAULT_SENTENCES["stream-server" if args.server else mode]
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
    args.variants = ["lossless", "default"] if args.only == "combined" else ["techniques", "lossless", "default"]
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    result = _with_progress(args, MODES[mode])
    mode = "stream-server" if args.server else mode
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


def _dtypes(value: str | None) -> list[str] | None:
    """``"fp32,bf16"`` -> ["fp32", "bf16"]; "auto" becomes the dtype it picks on this machine."""
    if value is None:
        return None
    from omnistudio.engine.model import DTYPES

    names = [v.strip().lower() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in DTYPES]
    if bad or not names:
        raise UserError(f"--dtypes {value}: give a comma-separated list of {', '.join(DTYPES)}")
    if len(set(names)) != len(names):
        raise UserError(f"--dtypes {value} names a dtype twice")
    return names


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
    from omnistudio.commands.flags.engine import engine_from_args

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

    table = Table(title=f"{result['model']} on {result['device']} ({','.join(result['dtypes'])}, "
                  f"{result['torch_threads']} threads, {result['num_step']} steps); ratios against "
                  f"{result['baseline']}")
    for col in ("variant", "ratio", "step ratio", "loop ratio", "ms/step", "vocoder ms", "RTF", "TTFA s", "peak MB",
                "tokens = stock", "agree", "agree base", "max |diff|"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for v in result["variants"]:
        table.add_row(v["name"], f"{v['ratio']:.2f}x", f"{v['step_ratio']:.2f}x", f"{v['loop_ratio']:.2f}x", f"{v['ms_per_step']:.1f}",
                      f"{v['vocoder_ms']:.0f}", f"{v['rtf']:.2f}", f"{v['ttfa_s']:.2f}", f"{v['peak_mem_mb']:.0f}",
                      "yes" if v["tokens_identical"] else "NO", f"{100 * v['token_agreement']:.1f}%",
                      f"{100 * v['baseline_agreement']:.1f}%", f"{v['max_abs_diff']:.3g}")
    Console().print(table)
    frames = ", ".join(f"{s['text_tokens']} text tokens / {s['target_frames']} frames" for s in result["sentences"])
    Console().print(f"inputs: reference {result['reference_frames']} frames; {frames}; compile {result['compile']}")
    default = next((v for v in result["variants"] if v["name"] == result.get("default_variant")), None)
    if default is not None and len(result["dtypes"]) > 1:
        Console().print(f"what a user gets by default ({default['name']}: auto dtype = {result['auto_dtype']}, "
                        f"{result['auto_dtype_reason']}; fast sampler): {default['ratio']:.2f}x stock "
                        f"{result['dtypes'][0]}, RTF {default['rtf']:.2f}")


SUMMARY_LINES = {
    "stream-server": "same take ({sentences} sentences, voice {voice}), server vs here: TTFA {remote[ttfa_s]:.3f} s vs "
                     "{local[ttfa_s]:.3f} s (x{ttfa_ratio}; network and protocol {remote[ttfa_overhead_s]:.3f} s of "
                     "it), whole script {remote[total_s]:.2f} s vs {local[total_s]:.2f} s (x{total_ratio}); engine "
                     "RTF {remote[engine_rtf]} vs {local[engine_rtf]}; identical samples: {identical}",
    "stream": "TTFA {ttfa_s:.3f} s, whole script {total_s:.2f} s ({sentences} sentences, {audio_s:.1f} s of audio), "
              "TTFA / whole = {ttfa_ratio}",
    "dialogue": "{lines} lines: sequential {sequential_s:.2f} s, batched (x{batch}) {batched_s:.2f} s -> "
                "throughput ratio {throughput_ratio:.2f}x (max |diff| {max_abs_diff:.3g})",
    "lengths": "{sentences} sentences of distinct lengths, compiled ({compile_mode}) after warm-up: {recompiles} "
               "recompilations; vocoder compiled / eager (median of the last 10) = {vocoder_ratio_last10:.2f}",
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
