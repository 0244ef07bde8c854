"""`omnistudio bench --serve`: the speech server under concurrent clients, cross-request batching off vs on.

One engine, one in-process server (the real app and middleware under uvicorn on a free loopback
port), the same requests in every setting: for each batching setting (``--max-batch 1`` and the
given batch) and each concurrency ``c``, the requests are sent by ``c`` client threads over HTTP
(`/v1/audio/speech`, streamed PCM). Throughput is audio seconds per wall second; TTFA is the time
from sending a request to its first audio byte (p50/p95). Ratios are against serving the requests
one at a time with batching off, measured in the same run.
"""

from __future__ import annotations

import logging
import socket
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

Progress = Callable[[int, int, str], None]


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


def _one(url: str, body: dict[str, Any]) -> tuple[float, float, int]:
    """(TTFA s, wall s, PCM bytes) of one streamed request."""
    import httpx

    started = time.perf_counter()
    ttfa, size = None, 0
    with httpx.stream("POST", f"{url}/v1/audio/speech", json=body, timeout=600) as resp:
        if resp.status_code != 200:
            raise RuntimeError(f"request failed with {resp.status_code}: {resp.read()[:200]!r}")
        for chunk in resp.iter_bytes():
            if ttfa is None and chunk:
                ttfa = time.perf_counter() - started
            size += len(chunk)
    wall = time.perf_counter() - started
    return ttfa if ttfa is not None else wall, wall, size


def bench_requests(count: int, num_step: int, voice: str) -> list[dict[str, Any]]:
    return [{"model": "omnivoice", "voice": voice, "response_format": "pcm", "num_step": num_step, "seed": 100 + i,
             "input": f"Bulletin item {i + 1} opens tonight's programme. The details follow after a short break."}
            for i in range(count)]


def serve_benchmark(engine: Any, clients: list[int], requests: int = 8, num_step: int = 10, max_batch: int = 8,
                    voice: str = "ruby", progress: Progress | None = None) -> dict[str, Any]:
    import uvicorn

    from omnistudio.server.factory import ServerConfig, build_server
    from omnistudio.server.pipeline import LocalEngine, parse_voice, resolve_voice
    from omnistudio.server.scheduler import BatchingLink

    say = progress or (lambda _d, _t, _m: None)
    ref, lang = parse_voice(voice)
    resolve_voice(engine, ref, lang or "en")  # the voice's prompt is built before any timing
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
    rows: list[dict[str, Any]] = []
    try:
        say(done, total, "warming up (every batch shape once)")
        for label in ("off", "on"):
            state.link = links[label]
            _measure(url, [{**b, "seed": 1} for b in bodies[:max(clients)]], max(clients), label, state.link)
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
            "max_batch": max_batch, "rows": rows}


def _measure(url: str, bodies: list[dict[str, Any]], clients: int, label: str, link: Any) -> dict[str, Any]:
    passes_before, items_before = link.stats.passes, link.stats.items
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(lambda b: _one(url, b), bodies))
    wall = time.perf_counter() - started
    audio_s = sum(size for _t, _w, size in results) / 2 / 24_000
    ttfas = [t for t, _w, _s in results]
    passes = link.stats.passes - passes_before
    return {"batching": label, "clients": clients, "wall_s": round(wall, 3), "audio_s": round(audio_s, 3),
            "throughput": round(audio_s / wall, 4), "ttfa_p50_s": round(statistics.median(ttfas), 4),
            "ttfa_p95_s": round(_percentile(ttfas, 0.95), 4),
            "mean_batch": round((link.stats.items - items_before) / passes, 2) if passes else None}
