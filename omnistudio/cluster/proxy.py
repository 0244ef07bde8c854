"""A middleware in Ray Serve's HTTP proxy: a request whose replica is lost is retried, then a clear 503.

Serve's proxy answers a request whose replica died before it answered with a bare ``500 Internal
Server Error`` (the proxy returns without answering). This middleware (loaded by the proxy from ``RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH``,
which :mod:`omnistudio.cluster.connect` sets for a local instance; a cluster sets it at ``ray start``)
keeps the request body, sends the request once more (Serve picks a live replica), and when that
fails too answers 503 in OpenAI's error shape with ``Retry-After``. Only answers without the
replica header are the proxy's own: an answer a replica made (any status) passes untouched, and a
response that already started streaming is never replayed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnistudio.protocol import REPLICA_HEADER as REPLICA  # loaded with the proxy, not on its first error
from omnistudio.protocol import error_json

if TYPE_CHECKING:
    from starlette.middleware import Middleware
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

CALLBACK_ENV = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"
CALLBACK_PATH = "omnistudio.cluster.proxy:middlewares"
REPLICA_HEADER = REPLICA.encode()
MAX_REPLAY_BYTES = 2 << 20
RETRIES = 1


def middlewares() -> list[Middleware]:
    """What Serve's proxy calls (through the environment variable) for its middlewares."""
    # lazy: start-up (starlette)
    from starlette.middleware import Middleware

    return [Middleware(ReplicaLoss)]


def _json_error(status: int, message: str) -> tuple[dict[str, object], dict[str, object]]:
    body = error_json(status, message, "server_error")  # the proxy's own answers are all server errors
    start = {"type": "http.response.start", "status": status,
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                         (b"retry-after", b"1")]}
    return start, {"type": "http.response.body", "body": body}


class ReplicaLoss:
    def __init__(self, app: ASGIApp, retries: int = RETRIES) -> None:
        self.app, self.retries = app, retries

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > MAX_REPLAY_BYTES:
                for part in _json_error(413, f"the request body is over {MAX_REPLAY_BYTES} bytes"):
                    await send(part)
                return
            if not message.get("more_body"):
                break
        why = ""
        for _attempt in range(self.retries + 1):
            outcome = await self._attempt(scope, bytes(body), receive, send)
            if outcome is None:
                return
            why = outcome
        for part in _json_error(503, f"no replica could finish the request ({why}); retry shortly"):
            await send(part)

    async def _attempt(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> str | None:
        """None when a replica answered (passed through); else why the proxy could not get an answer."""
        replay: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
        started, lost = False, ""

        async def replayed() -> Message:
            return replay.pop() if replay else await receive()

        async def watched(message: Message) -> None:
            nonlocal started, lost
            if message["type"] == "http.response.start" and not started:
                headers = dict(message.get("headers", []))
                if REPLICA_HEADER not in headers and message["status"] >= 500:
                    lost = f"proxy status {message['status']}"
                    return
                started = True
            if lost:
                return  # the proxy's own error body: replaced by ours
            await send(message)

        try:
            await self.app(scope, replayed, watched)
        except Exception as exc:  # noqa: BLE001 - the proxy raised before any answer: a lost replica
            if started:
                raise
            return type(exc).__name__
        if not started and not lost:
            return "the replica was lost"  # the proxy returns without answering (uvicorn would send a bare 500)
        return lost or None
