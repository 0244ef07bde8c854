"""`omnistudio bench --serve`: the speech server under concurrent clients, cross-request batching off vs on.

One engine, one in-process server (the real app and middleware under uvicorn on a free loopback
port), the same requests in every setting: for each batching setting (``--max-batch 1`` and the
given batch) and each concurrency ``c``, the requests are sent by ``c`` client threads over HTTP
(`/v1/audio/speech`, streamed PCM). Throughput is audio seconds per wall second; TTFA is the time
from sending a request to its first audio byte (p50/p95). Ratios are against serving the requests
one at a time with batching off, measured in the same run.
"""

from __future__ import annotations

import argparse
import logging
import socket
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, NotRequired, TypedDict

from omnistudio.bench.corpus import serve_text
from omnistudio.checks import check_batch
from omnistudio.errors import UserError
from omnistudio.protocol import SpeechRequest
from omnistudio.server.factory import ServerConfig, build_server

if TYPE_CHECKING:
    from omnistudio.bench.modes import GraphCounts, Modes, OpenEngine
    from omnistudio.engine.engine import Engine
    from omnistudio.server.scheduler import BatchingLink

Progress = Callable[[int, int, str], None]
DEFAULT_SENTENCES = 8


class ServeRow(TypedDict):
    """The requests sent by ``clients`` threads at once, batching off or on (``throughput_ratio``: against
    the first row's setting, one client, batching off)."""

    batching: str
    clients: int
    wall_s: float
    audio_s: float
    throughput: float
    ttfa_p50_s: float
    ttfa_p95_s: float
    mean_batch: float | None
    throughput_ratio: NotRequired[float]


class ServeResult(TypedDict):
    model: str
    device: str
    num_step: int
    requests: int
    max_batch: int
    rows: list[ServeRow]
    graphs: GraphCounts


def add_flags(parser: argparse.ArgumentParser, modes: Modes) -> None:
    modes.add_argument("--serve", action="store_true", help="speech server: throughput and TTFA p50/p95 per "
                       "client count, cross-request batching off vs on (--sentences = requests, default 8)")
    parser.add_argument("--clients", default="1,4,8", help="--serve: concurrent client counts (default 1,4,8)")
    parser.add_argument("--max-batch", type=int, default=8, help="--serve: batch size when batching is on "
                        "(default 8)")


def clients_list(value: str) -> list[int]:
    try:
        counts = [int(v) for v in str(value).split(",") if v.strip()]
    except ValueError:
        raise UserError(f"--clients '{value}' must be numbers separated by commas, e.g. 1,4,8") from None
    if not counts or any(not 1 <= c <= 64 for c in counts):
        raise UserError(f"--clients '{value}': each count must be in 1..64")
    return sorted(set(counts))


def check(args: argparse.Namespace) -> None:
    args.clients = clients_list(args.clients)
    check_batch(args.max_batch, "--max-batch", lo=2)


def _listening_socket() -> socket.socket:
    """A loopback socket on a port the system picks, listening: handed to the server as it is (no port
    is picked here and bound again there, where another program could take it in between)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def bench_requests(count: int, num_step: int, voice: str) -> list[SpeechRequest]:
    return [SpeechRequest(voice=voice, response_format="pcm", num_step=num_step, seed=100 + i, input=serve_text(i))
            for i in range(count)]


def serve_benchmark(engine: Engine, clients: list[int], requests: int = 8, num_step: int = 10, max_batch: int = 8,
                    voice: str = "ruby", progress: Progress | None = None) -> ServeResult:
    # lazy: start-up (numpy, pyebur128, scipy, uvicorn)
    import uvicorn

    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.server.pipeline import LocalEngine, parse_voice, resolve_voice
    from omnistudio.server.scheduler import BatchingLink

    say = progress or (lambda _d, _t, _m: None)
    ref, lang = parse_voice(voice)
    resolve_voice(engine, ref, lang or "en")  # the voice's prompt is built before any timing
    # lazy: start-up (numpy)
    from omnistudio.voices.startup import longest_row

    graphs = engine.prepare_graphs(range(1, max_batch + 1), longest_row(engine))  # as `serve` warms up
    sock = _listening_socket()
    port = sock.getsockname()[1]
    app = build_server(ServerConfig(max_batch=max_batch, max_queue=max(64, 2 * max(clients)), port=port))
    state = app.state.server
    state.status = "ready"  # the links are set below, one per batching setting
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="error", access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="bench-server", daemon=True)
    logging.getLogger("omnistudio.server").setLevel(logging.WARNING)  # no per-request lines
    thread.start()
    while not server.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    bodies = bench_requests(requests, num_step, voice)
    links = {"off": BatchingLink(LocalEngine(engine), 1), "on": BatchingLink(LocalEngine(engine), max_batch)}
    total, done = 2 * len(clients) + 1, 0
    rows: list[ServeRow] = []
    try:
        say(done, total, "warming up (every batch shape once)")
        for label in ("off", "on"):
            state.link = links[label]
            _measure(url, [b.model_copy(update={"seed": 1}) for b in bodies[:max(clients)]], max(clients), label,
                     state.link)
        done += 1
        for c in clients:  # interleaved, so that a change of machine load hits both settings alike
            for label in ("off", "on"):
                say(done, total, f"{c} client(s), batching {label}")
                state.link = links[label]
                rows.append(_measure(url, bodies, c, label, state.link))
                done += 1
    finally:
        for link in links.values():
            link.close()
        server.should_exit = True
        thread.join(10)
        sock.close()
    base = next(r for r in rows if r["batching"] == "off" and r["clients"] == min(clients))
    for row in rows:
        row["throughput_ratio"] = round(row["throughput"] / base["throughput"], 3)
    loaded = engine.loaded
    return {"model": loaded.spec.name, "device": str(loaded.device), "num_step": num_step, "requests": requests,
            "max_batch": max_batch, "rows": rows,
            "graphs": {"captured": graphs.captured, "capture_s": round(graphs.capture_s, 3), "failed": graphs.failed}}


def _measure(url: str, bodies: list[SpeechRequest], clients: int, label: str, link: BatchingLink) -> ServeRow:
    # lazy: start-up (httpx, urllib, websockets)
    from omnistudio.client.speech import speech

    passes_before, items_before = link.stats.passes, link.stats.items
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(lambda b: speech(url, b), bodies))
    wall = time.perf_counter() - started
    audio_s = sum(len(r.audio) for r in results) / 2 / 24_000
    ttfas = [r.first_byte_s for r in results]
    passes = link.stats.passes - passes_before
    return {"batching": label, "clients": clients, "wall_s": round(wall, 3), "audio_s": round(audio_s, 3),
            "throughput": round(audio_s / wall, 4), "ttfa_p50_s": round(statistics.median(ttfas), 4),
            "ttfa_p95_s": round(_percentile(ttfas, 0.95), 4),
            "mean_batch": round((link.stats.items - items_before) / passes, 2) if passes else None}


def run(args: argparse.Namespace, open_engine: OpenEngine) -> ServeResult:
    engine = open_engine(args, "fast")
    return serve_benchmark(engine, args.clients, requests=args.sentences, num_step=args.num_step,
                           max_batch=args.max_batch, progress=args.progress)


def print_result(result: ServeResult) -> None:
    # lazy: start-up (rich)
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
