"""A small stand-in speech server for the remote engine's fault tests (no model: fast, exact, scriptable).

It speaks the client side of ``/ws/tts/stream-omni`` as ``omnistudio serve`` does (render with f32
frames, prepare with progress, cancel) and answers ``GET /health`` and ``GET /v1/audio/voices``.
``behaviour`` makes it misbehave the ways a network does: ``401``, ``429``, ``drop`` (the socket dies
after the first sentence, once), ``die`` (after the first sentence the whole server goes away), ``slow``
(each sentence takes ``slow_s``; a cancel stops it).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fake_pcm(text: str, seed: int, n: int = 2400) -> np.ndarray:
    """What the stand-in 'renders': a deterministic function of the text and seed."""
    rng = np.random.default_rng([seed, len(text)])
    return (0.1 * rng.standard_normal(n)).astype(np.float32)


@dataclass
class FakeServer:
    port: int = field(default_factory=free_port)
    behaviour: str = "ok"
    key: str | None = None
    slow_s: float = 0.3
    requests: list[dict[str, Any]] = field(default_factory=list)
    cancels: int = 0
    connections: int = 0
    died_at: float | None = None  # monotonic time the 'die' behaviour cut the socket
    _server: Any = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeServer:
        from websockets.sync.server import serve

        self._server = serve(self._handle, "127.0.0.1", self.port, process_request=self._http)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -------------------------------------------------------------- HTTP
    def _http(self, connection: Any, request: Any) -> Any:
        if self.key is not None and request.headers.get("Authorization") != f"Bearer {self.key}":
            return connection.respond(401, json.dumps({"error": {"message": "invalid API key"}}))
        if self.behaviour == "429":
            response = connection.respond(429, json.dumps({"error": {"message": "queue full"}}))
            response.headers["Retry-After"] = "3"
            return response
        if request.path == "/health":
            engine = {"model": "fake", "device": "cpu", "dtype": "fp32", "sampler": "fast"}
            if self.behaviour == "loading":
                self.behaviour = "ok"  # ready at the next look
                return connection.respond(503, json.dumps({"status": "loading", "detail": "loading model"}))
            return connection.respond(200, json.dumps({"status": "ready", "engine": engine}))
        if request.path == "/v1/audio/voices":
            return connection.respond(200, json.dumps({"voices": [{"id": "ruby", "langs": ["en"]}], "duos": []}))
        return None  # the WebSocket route

    # --------------------------------------------------------- WebSocket
    def _handle(self, ws: Any) -> None:
        """One request per connection, closed after its answer (as the real server does)."""
        self.connections += 1
        from websockets.exceptions import ConnectionClosed

        try:
            message = json.loads(ws.recv())
            self.requests.append(message)
            if message.get("type") == "prepare":
                total = len(message["voices"])
                for done, v in enumerate(message["voices"], 1):
                    ws.send(json.dumps({"type": "prepare", "done": done, "total": total,
                                        "voice": str(v["voice"]), "lang": v["lang"], "action": "build"}))
                ws.send(json.dumps({"type": "prepared"}))
            elif self._render(ws, message):
                ws.close()
        except ConnectionClosed:
            pass

    def _render(self, ws: Any, message: dict[str, Any]) -> bool:
        ws.send(json.dumps({"type": "start", "sample_rate": 24000, "pcm": message.get("pcm", "s16"),
                            "sentences": len(message["items"])}))
        for n, item in enumerate(message["items"]):
            if self.behaviour == "slow":
                deadline = time.monotonic() + self.slow_s
                while time.monotonic() < deadline:
                    try:
                        got = json.loads(ws.recv(timeout=0.01))
                    except TimeoutError:
                        continue
                    if got.get("type") == "cancel":
                        self.cancels += 1
                        ws.send(json.dumps({"type": "cancelled"}))
                        return True
            pcm = fake_pcm(item["text"], item["seed"])
            ws.send(json.dumps({"type": "sentence_start", "index": n, "text": item["text"]}))
            half = len(pcm) // 2  # two frames, as a server streaming a sentence in pieces would
            ws.send(pcm[:half].astype("<f4").tobytes())
            ws.send(pcm[half:].astype("<f4").tobytes())
            ws.send(json.dumps({"type": "sentence_end", "index": n, "steps": 10, "frames": len(pcm),
                                "timings": {"wall_s": 0.05, "audio_s": len(pcm) / 24000, "rtf": 0.5}}))
            if n == 0 and self.behaviour in ("drop", "die"):
                if self.behaviour == "drop":
                    self.behaviour = "ok"  # once: the resend succeeds
                else:
                    self.died_at = time.monotonic()
                    threading.Thread(target=self.stop, daemon=True).start()
                ws.socket.shutdown(socket.SHUT_RDWR)
                return False
        ws.send(json.dumps({"type": "done"}))
        return True
