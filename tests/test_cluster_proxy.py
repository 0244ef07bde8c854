"""The pieces around Serve's proxy, without Ray: the lost-replica middleware and the replica labels."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

from omnistudio.cluster.proxy import REPLICA_HEADER, ReplicaLoss
from omnistudio.cluster.serve import ReplicaTag, label_metrics


class FakeProxy:
    """Serve's proxy as the middleware sees it: ``lost`` first calls return without answering."""

    def __init__(self, lost: int, status: int = 200, tagged: bool = True) -> None:
        self.lost, self.status, self.tagged, self.calls, self.bodies = lost, status, tagged, 0, []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.calls += 1
        self.bodies.append((await receive())["body"])
        if self.calls <= self.lost:
            return  # the replica died: nothing sent (uvicorn would answer a bare 500)
        headers = [(REPLICA_HEADER, b"r1")] if self.tagged else []
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": b"audio"})


def call(app: Any, body: bytes = b'{"input": "hi"}') -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    chunks = [{"type": "http.request", "body": body[:5], "more_body": True},
              {"type": "http.request", "body": body[5:], "more_body": False}]

    async def receive() -> dict[str, Any]:
        if chunks:
            return chunks.pop(0)
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app({"type": "http", "path": "/v1/audio/speech", "method": "POST"}, receive, send))
    return sent


def test_a_lost_replica_is_replayed_with_the_same_body() -> None:
    proxy = FakeProxy(lost=1)
    sent = call(ReplicaLoss(proxy))
    assert proxy.calls == 2 and proxy.bodies == [b'{"input": "hi"}'] * 2
    assert sent[0]["status"] == 200 and sent[1]["body"] == b"audio"


def test_lost_twice_is_a_clear_503() -> None:
    sent = call(ReplicaLoss(FakeProxy(lost=2)))
    assert sent[0]["status"] == 503 and (b"retry-after", b"1") in sent[0]["headers"]
    error = json.loads(sent[1]["body"])["error"]
    assert "no replica could finish the request" in error["message"] and error["code"] == "503"


def test_a_replicas_own_error_passes_untouched() -> None:
    proxy = FakeProxy(lost=0, status=500)
    sent = call(ReplicaLoss(proxy))
    assert proxy.calls == 1 and sent[0]["status"] == 500 and sent[1]["body"] == b"audio"
    sent = call(ReplicaLoss(FakeProxy(lost=0, status=503, tagged=False)))  # the proxy's own 503 (no replica)
    assert sent[0]["status"] == 503 and "error" in json.loads(sent[1]["body"])


def test_metrics_and_health_name_the_replica() -> None:
    text = b'# HELP x y\nomnistudio_queue_depth 0.0\nomnistudio_requests_total{route="/h",status="200"} 2.0\n'
    assert label_metrics(text, "ab12") == (b'# HELP x y\nomnistudio_queue_depth{replica="ab12"} 0.0\n'
                                           b'omnistudio_requests_total{replica="ab12",route="/h",status="200"} 2.0\n')

    async def health(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b'{"status": "ready"}'
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(ReplicaTag(health, "ab12")({"type": "http", "path": "/health"}, None, send))
    headers = dict(sent[0]["headers"])
    assert headers[REPLICA_HEADER] == b"ab12"
    assert json.loads(sent[1]["body"]) == {"status": "ready", "replica": "ab12"}
    assert int(headers[b"content-length"]) == len(sent[1]["body"])


@pytest.mark.skipif(not hasattr(socket, "SO_REUSEPORT"), reason="SO_REUSEPORT is Linux/BSD")
def test_a_reserved_port_keeps_others_off_and_lets_the_proxy_in() -> None:
    """`serve --ray --port 0`: the port picked is held until Serve's proxy listens on it; meanwhile no
    other socket can take it, and the proxy (binding as Serve does, SO_REUSEADDR + SO_REUSEPORT) can."""
    from omnistudio.cluster.serve import reserved_port

    with reserved_port("127.0.0.1", 8123) as port:
        assert port == 8123  # a fixed port is Serve's to bind, as given
    with reserved_port("127.0.0.1", 0) as port:
        assert port > 0
        for options in ((), (socket.SO_REUSEADDR,)):  # another program, with or without SO_REUSEADDR
            with socket.socket() as other:
                for option in options:
                    other.setsockopt(socket.SOL_SOCKET, option, 1)
                with pytest.raises(OSError):
                    other.bind(("127.0.0.1", port))
        with socket.socket() as proxy:
            proxy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            proxy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            proxy.bind(("127.0.0.1", port))
            proxy.listen()
            with socket.create_connection(("127.0.0.1", port), timeout=10):
                accepted, _ = proxy.accept()  # connections reach the proxy, not the reservation
                accepted.close()
    with socket.socket() as later:  # let go after the block (SO_REUSEADDR: the connection's TIME_WAIT stays)
        later.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        later.bind(("127.0.0.1", port))
