"""ASGI middleware around the routes: API keys (401 before anything runs), the body-size limit,
and one log line per request (method, route, status, audio seconds, wall time, TTFA)."""

from __future__ import annotations

import logging
import time
from typing import Any

from omnistudio.server.auth import OPEN_ROUTES, authorised
from omnistudio.protocol.elevenlabs import XI_ROUTE
from omnistudio.protocol import CONSENTS_ROUTE, MAX_BODY_BYTES, MAX_UPLOAD_BYTES, VOICES_ROUTE, WS_ROUTE, error_json

log = logging.getLogger("omnistudio.server")


async def _refuse(send: Any, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = error_json(status, message, "invalid_request_error")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


def request_line(method: str, path: str, status: int, wall_s: float, take: Any) -> str:
    audio = f"{take.audio_s:.2f}s" if take is not None and take.audio_s else "-"
    ttfa = f"{take.ttfa_s * 1000:.0f}ms" if take is not None and take.ttfa_s is not None else "-"
    return f"{method} {path} {status} audio={audio} wall={wall_s:.3f}s ttfa={ttfa}"


def _bearer(headers: dict[str, str]) -> str | None:
    """The request's key as an Authorization header: its own, or ElevenLabs' ``xi-api-key`` (agent frameworks
    send that one)."""
    if "authorization" in headers or "xi-api-key" not in headers:
        return headers.get("authorization")
    return f"Bearer {headers['xi-api-key']}"


def _route_label(path: str) -> str:
    """The route a path counts under: one label whatever the voice or consent id."""
    for prefix in (VOICES_ROUTE, CONSENTS_ROUTE):
        if path.startswith(prefix + "/"):
            return prefix + "/{id}"
    if path.startswith(XI_ROUTE + "/"):
        tail = path[len(XI_ROUTE) + 1:].partition("/")[2]
        return XI_ROUTE + "/{voice_id}" + (f"/{tail}" if tail else "")
    return path


class Guard:
    """Wraps the app: keys, body size, log line and the per-route request counter."""

    def __init__(self, app: Any, state: Any) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        path, method = scope.get("path", ""), scope.get("method", "WS")
        status = [0]

        async def watched(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            elif message["type"] == "websocket.accept":
                status[0] = 101
            elif message["type"] == "websocket.close" and not status[0]:
                status[0] = 403
            await send(message)

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            if path not in OPEN_ROUTES and not authorised(self.state.keys, _bearer(headers)):
                if scope["type"] == "websocket":
                    await watched({"type": "websocket.close", "code": 1008})
                    status[0] = 401
                else:
                    await _refuse(watched, 401, "missing or wrong API key: send Authorization: Bearer KEY "
                                  "(or xi-api-key: KEY)",
                                  [(b"www-authenticate", b"Bearer")])
                return
            length = headers.get("content-length", "0")
            limit = MAX_UPLOAD_BYTES if method == "POST" and path in (VOICES_ROUTE, CONSENTS_ROUTE) else MAX_BODY_BYTES
            if not length.isdigit() or int(length) > limit:
                await _refuse(watched, 413, f"the request body is over {limit} bytes")
                return
            await self.app(scope, receive, watched)
        except BaseException:
            status[0] = status[0] or 500  # a failure before any answer is the server's (counted, then raised)
            raise
        finally:
            take = scope.get("state", {}).get("take")
            route = _route_label(path)
            self.state.metrics.requests.labels(route=route if route in KNOWN_ROUTES else "other",
                                               status=str(status[0])).inc()
            if path not in ("/health", "/metrics"):
                log.info("%s", request_line(method, path, status[0], time.perf_counter() - started, take))


KNOWN_ROUTES = frozenset({"/v1/audio/speech", "/v1/audio/voices", "/v1/models", "/health", "/metrics",
                          "/tts/generate", "/tts/generate-shm", "/v1/text/normalize", "/v1/lexicon", "/mcp", WS_ROUTE})
KNOWN_ROUTES |= {VOICES_ROUTE + "/{id}", CONSENTS_ROUTE, CONSENTS_ROUTE + "/{id}"}  # one label whatever the id
KNOWN_ROUTES |= {XI_ROUTE + "/{voice_id}" + tail for tail in ("", "/stream", "/stream/with-timestamps", "/stream-input",
                                                                "/multi-stream-input")}
