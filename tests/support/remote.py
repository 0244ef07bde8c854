"""A small stand-in speech server for the remote engine's fault tests (no model: fast, exact, scriptable),
and probes of the remote link's network calls.

It speaks the client side of ``/ws/tts/stream-omni`` as ``omnistudio serve`` does (render with f32
frames, prepare with progress, cancel) and answers ``GET /health`` and ``GET /v1/audio/voices``.
``behaviour`` makes it misbehave the ways a network does: ``401``, ``429``, ``drop`` (the socket dies
after the first sentence, once), ``die`` (after the first sentence the whole server goes away), ``hold``
(after the first ``free`` sentences it holds each one until released or cancelled: a render always
in progress, whatever the machine's speed, so a test can cut it or cancel it mid-sentence).

Ports: the server listens on a socket it binds itself (port 0: the system picks a free one, read back
from the socket), so no port is chosen, closed and handed over for someone else to take in between.
"""

from __future__ import annotations

import errno
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from omnistudio import protocol as wire

# the stand-in's roster, as the real server lists it: two anchors (prompt states per language) and a duo
VOICES = wire.VoiceListing(
    voices=[wire.VoiceEntry(id="ruby", name="Ruby", languages=["en", "es"], prompts={"en": "ready", "es": "missing"}),
            wire.VoiceEntry(id="storm", name="Storm", languages=["en"], prompts={"en": "stale"})],
    duos=[wire.DuoEntry(voice="ruby+storm@0.7", anchors=("ruby", "storm"), languages=["en"], alpha=0.7)])


def listening_socket(port: int = 0, retry_s: float = 5.0) -> socket.socket:
    """A TCP socket listening on 127.0.0.1:``port`` (0: a free port the system picks).

    A given port is a server coming back where a client already points: the remote engine keeps the URL
    it was made with, so a server that went away can only be found again on the same port. The bind is
    made right after the previous server closed, with SO_REUSEADDR (its closed connections leave the port
    in TIME_WAIT); a port something else took meanwhile (any program's outgoing connection may be given
    a free port) is retried for ``retry_s``, then the bind error is raised."""
    deadline = time.monotonic() + retry_s
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(64)
            return sock
        except OSError as exc:
            sock.close()
            if port == 0 or exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextmanager
def refused_port() -> Iterator[socket.socket]:
    """A socket bound to a free port and not listening: a connection there is refused (nothing answers),
    and no other program can take the port while it is held. ``FakeServer(sock=...)`` listens on it later
    (a server that comes up where a client has been pointing all along)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        yield sock
    finally:
        sock.close()


def fake_pcm(text: str, seed: int, n: int = 2400) -> np.ndarray:
    """What the stand-in 'renders': a deterministic function of the text and seed."""
    rng = np.random.default_rng([seed, len(text)])
    return (0.1 * rng.standard_normal(n)).astype(np.float32)


@dataclass
class FakeServer:
    behaviour: str = "ok"
    key: str | None = None
    port: int = 0  # 0: a free port (known once started); a port: the one a stopped server had (a restart)
    sock: socket.socket | None = None  # a bound socket to listen on (see refused_port), instead of ``port``
    free: int = 1  # "hold": the sentences answered at once (over the server's life) before it holds
    hold_s: float = 30.0  # "hold": a hang guard, not a timing: a hold never released ends after this
    requests: list[dict[str, Any]] = field(default_factory=list)
    cancels: int = 0
    connections: int = 0
    sent: int = 0  # sentences sent (over the server's life)
    holding: threading.Event = field(default_factory=threading.Event)  # "hold": a sentence is being held
    release: threading.Event = field(default_factory=threading.Event)  # "hold": send the held sentences
    _server: Any = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeServer:
        from websockets.sync.server import serve

        if self.sock is not None:
            self.sock.listen(64)
            sock = self.sock
        else:
            sock = listening_socket(self.port)
        self.port = sock.getsockname()[1]
        self._server = serve(self._handle, sock=sock, process_request=self._http)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the listening socket and every open connection (code 1001), then wait for the handlers."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
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
            health = wire.Health(status="ready", protocol=wire.PROTOCOL, sample_rate=24000,
                                 engine=wire.EngineInfo(model="fake", device="cpu", dtype="fp32", sampler="fast", threads=3))
            if self.behaviour == "loading":
                self.behaviour = "ok"  # ready at the next look
                return connection.respond(503, wire.frame(wire.Health(status="loading", detail="loading model")))
            if self.behaviour == "old-protocol":  # a server from before the protocol's version field
                return connection.respond(200, health.model_dump_json(exclude={"protocol"}))
            return connection.respond(200, wire.frame(health))
        if request.path == "/v1/audio/voices":
            return connection.respond(200, wire.frame(VOICES))
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
                    ws.send(wire.frame(wire.WsPrepareStep(done=done, total=total, voice=str(v["voice"]),
                                                          lang=v["lang"], action="build")))
                ws.send(wire.frame(wire.WsPrepared()))
            elif self._render(ws, message):
                ws.close()
        except ConnectionClosed:
            pass  # the client went away, or stop() closed the connection

    def _hold(self, ws: Any) -> bool:
        """'hold': wait for ``release`` (True) or a cancel, which is answered (False); a closed connection
        raises ConnectionClosed. Polls the socket, so a cancel is seen while the sentence is held."""
        self.holding.set()
        deadline = time.monotonic() + self.hold_s
        try:
            while not self.release.is_set() and time.monotonic() < deadline:
                try:
                    got = json.loads(ws.recv(timeout=0.01))
                except TimeoutError:
                    continue
                if got.get("type") == "cancel":
                    self.cancels += 1
                    ws.send(wire.frame(wire.WsCancelled()))
                    return False
            self.release.set()  # released, or never: after one hang guard the server holds nothing more
            return True
        finally:
            self.holding.clear()

    def _render(self, ws: Any, message: dict[str, Any]) -> bool:
        ws.send(wire.frame(wire.WsStart(sample_rate=24000, pcm=message.get("pcm", "s16"),
                                        sentences=len(message["items"]))))
        if self.behaviour == "unknown-event":  # a newer server's message this client does not know
            ws.send(json.dumps({"type": "sentence_words", "index": 0}))
        for n, item in enumerate(message["items"]):
            if self.behaviour == "hold" and self.sent >= self.free and not self._hold(ws):
                return True  # cancelled: nothing more of this request is sent
            pcm = fake_pcm(item["text"], item["seed"])
            ws.send(wire.frame(wire.WsSentenceStart(index=n, text=item["text"])))
            half = len(pcm) // 2  # two frames, as a server streaming a sentence in pieces would
            ws.send(pcm[:half].astype("<f4").tobytes())
            ws.send(pcm[half:].astype("<f4").tobytes())
            ws.send(wire.frame(wire.WsSentenceEnd(index=n, steps=10, frames=len(pcm), timings={
                "wall_s": 0.05, "audio_s": len(pcm) / 24000, "rtf": 0.5})))
            self.sent += 1
            if n == 0 and self.behaviour in ("drop", "die"):
                if self.behaviour == "drop":
                    self.behaviour = "ok"  # once: the resend succeeds
                else:
                    # Nothing listens any more before the client sees the cut, so its reconnect is refused
                    # (not accepted by a server half shut down), whichever thread runs first.
                    server = self._server
                    threading.Thread(target=self.stop, daemon=True).start()
                    server.socket_closed.wait(timeout=5)
                ws.socket.shutdown(socket.SHUT_RDWR)
                return False
        ws.send(wire.frame(wire.WsDone()))
        return True


class Connects:
    """Counts the remote link's connection attempts and records the backoff waits between them.

    The link's Backoff runs on a clock that only its own waits move (the real sleeps still happen), so
    "it gives up once its connect budget is spent" is a sum of waits, whatever the machine's load:
    ``waits`` holds, per ``connect_ws`` call, the delays its Backoff gave before it raised."""

    def __init__(self, monkeypatch: Any) -> None:
        from omnistudio.client import connection as net

        self.attempts = 0
        self.waits: list[list[float]] = []
        real_connect, log = net.connect, self

        class CountedBackoff(net.Backoff):
            def __init__(self, budget_s: float = 1.0, first: float = 0.1, cap: float = 1.0, clock: Any = None) -> None:
                self.now = 0.0
                self.delays: list[float] = []
                log.waits.append(self.delays)
                super().__init__(budget_s, first, cap, clock=lambda: self.now)

            def next_delay(self) -> float | None:
                delay = super().next_delay()
                if delay is not None:
                    self.now += delay
                    self.delays.append(delay)
                return delay

        def connect(*args: Any, **kwargs: Any) -> Any:
            log.attempts += 1
            return real_connect(*args, **kwargs)

        monkeypatch.setattr(net, "Backoff", CountedBackoff)
        monkeypatch.setattr(net, "connect", connect)


class LinkGate:
    """Watches the remote link's blocking network calls (each WebSocket connection attempt, each HTTP GET):
    which thread made each. Once armed, it holds every new one until released, so a test sees what the UI
    does while the link is blocked on the network, and could not pass if such a call ran on the UI thread
    (the UI would be the one held). ``hang_s`` only bounds a hang: a call held that long goes on, counted
    in ``expired``, and the gate holds nothing more."""

    def __init__(self, monkeypatch: Any, hang_s: float = 30.0) -> None:
        from omnistudio.client import connection as net

        self.calls: list[tuple[str, int, bool]] = []  # (what, thread ident, made while armed)
        self.hang_s = hang_s
        self._lock = threading.Lock()
        self._armed = False
        self._in_flight = 0
        self._held = 0
        self._open = threading.Event()
        self.expired = 0  # holds that ended by ``hang_s``, not by release()
        monkeypatch.setattr(net, "connect", self._watch("connect", net.connect))
        monkeypatch.setattr(net, "get_json", self._watch("get_json", net.get_json))

    def _watch(self, what: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                armed = self._armed
                self.calls.append((what, threading.get_ident(), armed))
                self._in_flight += 1
                self._held += armed
            try:
                if armed:
                    try:
                        if not self._open.wait(self.hang_s):  # never released: whoever should have was stuck
                            self.expired += 1
                            self._open.set()  # and nothing is held any more
                    finally:
                        with self._lock:
                            self._held -= 1
                return real(*args, **kwargs)
            finally:
                with self._lock:
                    self._in_flight -= 1

        return call

    def arm(self) -> bool:
        """Hold every call from now on; refused (False) while a call is in flight, which would go unheld."""
        with self._lock:
            if self._in_flight:
                return False
            self._armed = True
            return True

    @property
    def held(self) -> int:
        """How many calls are waiting at the gate now."""
        return self._held

    def release(self) -> None:
        self._open.set()

    def threads(self, armed_only: bool = False) -> set[int]:
        return {ident for _, ident, armed in self.calls if armed or not armed_only}
