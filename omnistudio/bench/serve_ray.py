"""``omnistudio bench --serve --ray``: throughput of ``serve --ray`` per replica count, measured in one run
(``bench --serve --ray --replicas 1,2``). Ray and the cluster modules are imported when it runs.

For each replica count the deployment is (re)started on the same cluster and proxy port, every
replica answers one untimed request (warm), then ``requests`` speech requests are sent by
``concurrency`` clients at once; throughput is requests and seconds of audio per wall second.
The ratios are to the first replica count of the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, NotRequired, TypedDict

from omnistudio.bench.corpus import SERVE_TEXT
from omnistudio.cluster.connect import import_serve
from omnistudio.engine.settings import EngineConfig
from omnistudio.errors import UserError
from omnistudio.server.factory import ServerConfig

if TYPE_CHECKING:
    from omnistudio.bench.modes import OpenEngine, Progress

DEFAULT_SENTENCES = 8


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ray", action="store_true", help="with --serve: requests per second through Ray Serve for "
                        "each --replicas count (pip install 'omnistudio[ray]')")
    parser.add_argument("--replicas", default="1,2", help="with --serve --ray: replica counts to compare "
                        "(default 1,2)")
    parser.add_argument("--address", default=None, help="with --serve --ray: Ray cluster (auto, ray://HOST:10001; "
                        "default: a local instance)")


def check(args: argparse.Namespace) -> None:
    if not (args.serve and args.ray):
        raise UserError("the serve benchmark runs on Ray: give --serve --ray together")

    import_serve()
    try:
        args.replicas = tuple(int(n) for n in str(args.replicas).split(","))
    except ValueError:
        raise UserError(f"--replicas '{args.replicas}' must be counts separated by commas, e.g. 1,2") from None
    if not args.replicas or min(args.replicas) < 1:
        raise UserError(f"--replicas counts must be at least 1, got {args.replicas}")


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
    """(audio seconds, the replica that answered) of one request."""
    # lazy: start-up (httpx, pydantic, urllib, websockets)
    from omnistudio.client.speech import speech
    from omnistudio.protocol import SpeechRequest

    reply = speech(url, SpeechRequest(input=SERVE_TEXT, voice="ruby", response_format="pcm", num_step=num_step,
                                      seed=seed))
    return len(reply.audio) / 2 / 24_000, reply.replica


class ReplicaRun(TypedDict):
    """The requests on one replica count (``ratio``: requests per second against the first count's)."""

    replicas: int
    requests: int
    wall_s: float
    requests_per_s: float
    audio_s_per_s: float
    replicas_answering: int
    ratio: NotRequired[float | None]


class ServeRayResult(TypedDict):
    model: str
    device: str
    cpus_per_replica: float
    gpus_per_replica: float
    concurrency: int
    num_step: int
    runs: list[ReplicaRun]


def serve_ray_benchmark(bench: ServeBench, progress: Progress | None = None) -> ServeRayResult:
    # lazy: start-up (pydantic); looked up when called (tests replace it)
    from omnistudio.cluster import serve as cluster_serve
    from omnistudio.cluster.connect import Cluster, Need

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
        config = ServerConfig(engine=EngineConfig(bench.model, bench.device, threads=max(1, int(cpus))),
                              warm_up=True, max_queue=max(16, bench.concurrency), port=port)
        runs: list[ReplicaRun] = []
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


def run(args: argparse.Namespace, open_engine: OpenEngine) -> ServeRayResult:
    # lazy: start-up (pydantic)
    from omnistudio.bench.serve import clients_list

    clients = args.clients if isinstance(args.clients, list) else clients_list(args.clients)
    bench = ServeBench(replicas=args.replicas, requests=args.sentences, concurrency=max(clients),
                       num_step=args.num_step, model=args.model, device=args.device, address=args.address)
    return serve_ray_benchmark(bench, progress=args.progress)


def print_result(result: ServeRayResult) -> None:
    print(f"{result['model']} on {result['device']}, {result['cpus_per_replica']:g} CPU + "
          f"{result['gpus_per_replica']:g} GPU per replica, {result['concurrency']} clients, "
          f"{result['num_step']} steps:")
    for run in result["runs"]:
        print(f"  {run['replicas']} replicas: {run['requests']} requests in {run['wall_s']:.2f} s -> "
              f"{run['requests_per_s']:.3f} req/s, {run['audio_s_per_s']:.2f} s of audio per s "
              f"({run['ratio']:.2f}x; {run['replicas_answering']} replicas answered)")
