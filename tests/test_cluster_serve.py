"""`omnistudio serve --ray`: the server's app on Ray Serve, two replicas behind Serve's proxy.

One local Ray instance (2 CPUs, replicas of 0.5 CPU) and one single-process server for the module;
the same request and seed must give the same bytes from both."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ray = pytest.importorskip("ray")
openai = pytest.importorskip("openai")

TEXT = "Good evening. Here is the news."
EXTRA = {"seed": 7, "num_step": 2}
LIMIT_S = 120.0  # no request may take longer than this once a replica is killed


@pytest.fixture(scope="module")
def single(omnistudio_home: Path) -> Iterator[str]:
    """The single-process server (`omnistudio serve`), one torch thread like each replica."""
    from server_support import Server

    server = Server()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def cluster(single: str) -> Iterator[str]:
    """Two replicas on a local Ray instance (started after the single server built the default voice)."""
    from ray import serve

    from server_support import free_port

    from omnistudio.cluster import serve as cluster_serve
    from omnistudio.cluster.connect import Cluster, set_local_env

    set_local_env()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    try:
        url = cluster_serve.start(Cluster(None), cluster_serve.ReplicaConfig(model="tiny", device="cpu",
                                                                             warm_up=False, threads=1),
                                  cluster_serve.Scale(replicas=2, cpus=0.5, port=free_port()))
        yield url
    finally:
        serve.shutdown()
        ray.shutdown()


def client(url: str, **kwargs: Any) -> Any:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", **kwargs)


def speech(url: str, fmt: str = "wav") -> Any:
    return client(url, max_retries=0).audio.speech.with_raw_response.create(
        model="omnivoice", voice="ruby", input=TEXT, response_format=fmt, extra_body=EXTRA)


def test_two_replicas_give_the_single_process_servers_audio(single: str, cluster: str) -> None:
    expected = speech(single).content
    assert len(expected) > 1000
    answers: list[Any] = [None] * 8

    def ask(i: int) -> None:
        answers[i] = speech(cluster)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(answers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LIMIT_S)
    assert all(a is not None and a.content == expected for a in answers)  # bit for bit, from either replica
    assert len({a.headers["x-omnistudio-replica"] for a in answers}) == 2  # both replicas answered

    def streamed(url: str) -> bytes:
        with client(url).audio.speech.with_streaming_response.create(
                model="omnivoice", voice="ruby", input=TEXT, response_format="pcm", extra_body=EXTRA) as r:
            return b"".join(r.iter_bytes())

    assert streamed(cluster) == streamed(single)


async def _ws(url: str) -> tuple[list[dict[str, Any]], bytes]:
    import websockets

    messages: list[dict[str, Any]] = []
    audio = bytearray()
    async with websockets.connect(url.replace("http://", "ws://") + "/ws/tts/stream-omni") as ws:
        await ws.send(json.dumps({"text": TEXT, "voice": "ruby", **EXTRA}))
        async for message in ws:
            if isinstance(message, bytes):
                audio += message
            else:
                messages.append(json.loads(message))
    return messages, bytes(audio)


def test_websocket_through_the_proxy(single: str, cluster: str) -> None:
    messages, audio = asyncio.run(_ws(cluster))
    assert messages[0]["type"] == "start" and messages[-1]["type"] == "done"
    assert audio == asyncio.run(_ws(single))[1]


def test_health_and_metrics_name_the_replica(cluster: str) -> None:
    health = httpx.get(f"{cluster}/health")
    assert health.status_code == 200
    assert health.json()["replica"] == health.headers["x-omnistudio-replica"]
    metrics = httpx.get(f"{cluster}/metrics")
    replica = metrics.headers["x-omnistudio-replica"]
    samples = [line for line in metrics.text.splitlines() if line and not line.startswith("#")]
    assert samples and all(f'replica="{replica}"' in line for line in samples)


def test_killing_a_replica_leaves_no_request_hanging(single: str, cluster: str) -> None:
    request = {"input": " ".join([TEXT] * 4), "voice": "ruby", "response_format": "flac", **EXTRA, "num_step": 4}
    expected = httpx.post(f"{single}/v1/audio/speech", json=request, timeout=LIMIT_S).content
    results: dict[int, Any] = {}

    def ask(i: int) -> None:
        try:
            r = httpx.post(f"{cluster}/v1/audio/speech", timeout=LIMIT_S, json=request)
            results[i] = (r.status_code, r.content, r.headers)
        except httpx.HTTPError as exc:
            results[i] = ("error", repr(exc), {})

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    started = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(2.0)  # every request is on a replica by now, rendering
    replicas = [a for a in ray.util.list_named_actors(all_namespaces=True) if "SpeechReplica" in a["name"]]
    assert len(replicas) == 2
    ray.kill(ray.get_actor(replicas[0]["name"], namespace=replicas[0]["namespace"]), no_restart=True)
    for t in threads:
        t.join(max(0.0, LIMIT_S + 10 - (time.monotonic() - started)))
    assert not any(t.is_alive() for t in threads), "a request hung"
    for status, body, headers in results.values():
        if status == 200:
            assert body == expected  # finished on the other replica, same audio
        else:  # or a clear 503 in OpenAI's error shape
            assert status == 503, (status, body[:200])
            assert "replica" in json.loads(body)["error"]["message"] and headers["retry-after"]
    assert len(results) == 6
