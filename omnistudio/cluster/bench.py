"""Throughput of ``serve --ray`` per replica count, measured in one run (``bench --serve --ray --replicas 1,2``).

For each replica count the deployment is (re)started on the same cluster and proxy port, every
replica answers one untimed request (warm), then ``requests`` speech requests are sent by
``concurrency`` clients at once; throughput is requests and seconds of audio per wall second.
The ratios are to the first replica count of the same run.
"""

from __future__ import annotations

import contextlib
import functools
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from omnistudio.cluster.connect import Cluster, Need
from omnistudio.server.factory import ServerConfig

TEXT = "Good evening. Here is the news from the desk tonight."


@dataclass(frozen=True)
class ServeBench:
    replicas: tuple[int, ...] = (1, 2)
    requests: int = 8
    concurrency: int = 4
    num_step: int = 10
    model: str | None = None
    device: str | None = None
    address: str | None = None


def _speech(url: str, num_step: int, seed: int) -> tuple[float, str]:
    import httpx

    r = httpx.post(f"{url}/v1/audio/speech", timeout=600, json={
        "input": TEXT, "voice": "ruby", "response_format": "pcm", "num_step": num_step, "seed": seed})
    r.raise_for_status()
    return len(r.content) / 2 / 24_000, r.headers.get("x-omnistudio-replica", "")


def serve_ray_benchmark(bench: ServeBench, progress: Any = None) -> dict[str, Any]:
    from omnistudio.cluster import serve as cluster_serve

    progress = progress or (lambda done, total, label: None)
    cluster = Cluster(bench.address)
    stack = contextlib.ExitStack()
    try:
        have = cluster.resources()
        gpus = 1.0 if have.get("GPU") and bench.device != "cpu" else 0.0
        cpus = min(1.0, have.get("CPU", 1.0) / max(bench.replicas))
        for n in bench.replicas:  # every count checked before the first starts
            cluster.check_fits(Need(n, cpus, gpus))
        # one port for every run (Serve's proxy stays up between them), held until the bench ends
        port = stack.enter_context(cluster_serve.reserved_port("127.0.0.1", 0))
        config = ServerConfig(model=bench.model, device=bench.device, warm_up=True,
                              max_queue=max(16, bench.concurrency), threads=max(1, int(cpus)), port=port)
        runs: list[dict[str, Any]] = []
        for i, n in enumerate(bench.replicas):
            progress(i, len(bench.replicas), f"starting {n} replicas")
            url = cluster_serve.start(cluster, config, cluster_serve.Scale(replicas=n, cpus=cpus, gpus=gpus,
                                                                           port=port))
            with ThreadPoolExecutor(max(n, bench.concurrency)) as pool:
                ask = functools.partial(_speech, url, bench.num_step)
                list(pool.map(ask, range(n)))  # warm, untimed
                progress(i, len(bench.replicas), f"{bench.requests} requests on {n} replicas")
                started = time.perf_counter()
                answers = list(pool.map(ask, range(bench.requests)))
                wall = time.perf_counter() - started
            audio = sum(a for a, _ in answers)
            runs.append({"replicas": n, "requests": bench.requests, "wall_s": round(wall, 3),
                         "requests_per_s": round(bench.requests / wall, 4), "audio_s_per_s": round(audio / wall, 4),
                         "replicas_answering": len({r for _, r in answers})})
            cluster_serve.undeploy()
        base = runs[0]["requests_per_s"]
        for run in runs:
            run["ratio"] = round(run["requests_per_s"] / base, 3) if base else None
        return {"model": bench.model or "default", "device": bench.device or "auto", "cpus_per_replica": cpus,
                "gpus_per_replica": gpus, "concurrency": bench.concurrency, "num_step": bench.num_step,
                "runs": runs}
    finally:
        stack.close()
        cluster_serve.stop(cluster)
