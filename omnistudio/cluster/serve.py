"""``omnistudio serve --ray``: the server's ASGI app as a Ray Serve deployment.

Each replica is a Ray actor that builds the same app as the single-process server (the app
factory, the API-key guard, the batching engine link) around its own engine: model, prompt cache
and scheduler, loaded and warmed in the replica's constructor, so Serve routes no request to it
before it is ready. Serve's HTTP proxy (on every node, ``--port``) picks a replica per request
(power of two choices over the replicas' queue lengths) and streams the response through;
WebSockets are carried the same way. Every response names the replica that made it
(``X-OmniStudio-Replica``); ``/health`` says it in its body and ``/metrics`` labels every sample
with it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING

from omnistudio.cluster.connect import Cluster, Need, import_serve
from omnistudio.cluster.proxy import REPLICA_HEADER
from omnistudio.errors import UserError
from omnistudio.server.factory import ServerConfig, build_server

if TYPE_CHECKING:
    from ray.serve import Application
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

APP_NAME = "omnistudio"


ReplicaConfig = ServerConfig  # what every replica builds its server from (plain values: it travels as it is)


@dataclass(frozen=True)
class Scale:
    """How many replicas, what each holds, and where the proxy listens."""

    replicas: int = 1
    cpus: float = 1.0
    gpus: float = 0.0
    min_replicas: int | None = None
    max_replicas: int | None = None
    host: str = "127.0.0.1"
    port: int = 8000

    def __post_init__(self) -> None:
        Need(self.replicas, self.cpus, self.gpus)  # one line for 0 replicas, 0 CPUs, negative GPUs
        if (self.min_replicas is None) != (self.max_replicas is None):
            raise UserError("autoscaling needs both --min-replicas and --max-replicas")
        if self.min_replicas is not None and self.max_replicas is not None:
            if self.min_replicas < 1:
                raise UserError(f"--min-replicas must be at least 1, got {self.min_replicas}")
            if self.max_replicas < self.min_replicas:
                raise UserError(f"--max-replicas {self.max_replicas} is below --min-replicas {self.min_replicas}")

    @property
    def first(self) -> int:
        """Replicas started at once (the autoscaler's floor when it is on)."""
        if self.min_replicas is None or self.max_replicas is None:
            return self.replicas
        return min(max(self.replicas, self.min_replicas), self.max_replicas)

    def deployment_options(self, config: ServerConfig) -> dict[str, object]:
        options: dict[str, object] = {
            "ray_actor_options": {"num_cpus": self.cpus, "num_gpus": self.gpus},
            "max_ongoing_requests": config.max_queue,  # the replica's own 429 answers past this
            "health_check_period_s": 2.0, "health_check_timeout_s": 10.0,
            "graceful_shutdown_timeout_s": 5.0}
        if self.min_replicas is None:
            options["num_replicas"] = self.replicas
        else:
            options["autoscaling_config"] = {"min_replicas": self.min_replicas, "max_replicas": self.max_replicas,
                                             "initial_replicas": self.first, "target_ongoing_requests": 2}
        return options


class SpeechReplica:
    """One replica: the engine and the server state around it (wrapped by ``serve.ingress`` below)."""

    def __init__(self, config: ServerConfig) -> None:

        # lazy: start-up (torch); looked up when called (tests replace it)
        import torch

        # lazy: looked up when called (tests replace it)
        from omnistudio.server.startup import start_engine

        torch.set_num_threads(max(1, config.engine.threads or 1))  # serve --ray passes the caller's count
        self.replica = _replica_id()
        self.server_config = config
        # not ``app``: Serve's wrapper has a property of that name. No MCP tools on a replica, whoever built
        # the config: /mcp answers a 404 that says why (a session, its cancel and its files live in one process)
        self.server_app = build_server(replace(config, mcp=False))
        self.state = self.server_app.state.server
        start_engine(config, self.state, SimpleNamespace(should_exit=False))  # loads, warms, publishes the link
        if self.state.status != "ready":
            raise RuntimeError(f"replica {self.replica}: {self.state.detail or self.state.status}")

    def __serve_build_asgi_app__(self) -> ReplicaTag:
        return ReplicaTag(self.server_app, self.replica)

    def check_health(self) -> None:
        """Serve's periodic probe: a failed engine takes the replica out of routing."""
        if self.state.status != "ready" or self.state.link is None:
            raise RuntimeError(f"engine {self.state.status}")

    def __del__(self) -> None:
        link = getattr(getattr(self, "state", None), "link", None)
        if link is not None:
            link.close()


def _replica_id() -> str:
    try:
        # lazy: start-up (ray)
        from ray import serve

        return str(serve.get_replica_context().replica_id.unique_id)
    except Exception:  # noqa: BLE001 - outside Serve (a unit test): the process id names it
        return f"pid{os.getpid()}"


_SAMPLE = re.compile(rb"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?( .*)$")


def label_metrics(body: bytes, replica: str) -> bytes:
    """Prometheus text with ``replica="ID"`` added to every sample."""
    label = b'replica="' + replica.encode() + b'"'
    out = []
    for line in body.split(b"\n"):
        m = _SAMPLE.match(line)
        if m is None or line.startswith(b"#"):
            out.append(line)
        elif m.group(2):
            out.append(m.group(1) + b"{" + label + b"," + m.group(2)[1:] + m.group(3))
        else:
            out.append(m.group(1) + b"{" + label + b"}" + m.group(3))
    return b"\n".join(out)


class ReplicaTag:
    """ASGI wrapper: the replica's id in a header of every response, in /health's body and /metrics' labels."""

    def __init__(self, app: ASGIApp, replica: str) -> None:
        self.app, self.replica = app, replica

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        rewrite = path in ("/health", "/metrics")
        start: Message = {}
        body: list[bytes] = []

        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if not (rewrite and k == b"content-length")]
                message = {**message, "headers": [*headers, (REPLICA_HEADER, self.replica.encode())]}
                if rewrite:
                    start.update(message)
                    return
            elif rewrite and message["type"] == "http.response.body":
                body.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                data = self._rewrite(path, b"".join(body))
                await send({**start, "headers": [*start["headers"], (b"content-length", str(len(data)).encode())]})
                message = {"type": "http.response.body", "body": data}
            await send(message)

        await self.app(scope, receive, tagged)

    def _rewrite(self, path: str, data: bytes) -> bytes:
        if path == "/metrics":
            return label_metrics(data, self.replica)

        try:
            parsed = json.loads(data)
        except ValueError:
            return data
        return json.dumps({**parsed, "replica": self.replica}).encode() if isinstance(parsed, dict) else data


def deployment(config: ServerConfig, scale: Scale) -> Application:
    """The bound Serve application (not started)."""
    serve = import_serve()
    ingress = serve.deployment(name="SpeechReplica")(serve.ingress()(SpeechReplica))
    bound: Application = ingress.options(**scale.deployment_options(config)).bind(config)
    return bound


def start(cluster: Cluster, config: ServerConfig, scale: Scale, timeout_s: float = 600.0) -> str:
    """Check the request fits, start Serve's proxy and the replicas; return the proxy's URL.
    ``scale.port`` 0 (a local instance only): a free port of this machine, held until the proxy
    listens on it.

    Nothing is left running when this raises: the application is deleted again."""

    serve = import_serve()
    logging.getLogger("ray.serve").setLevel(logging.WARNING)  # its INFO lines are Serve's, not the user's
    cluster.check_fits(Need(scale.first, scale.cpus, scale.gpus))
    with reserved_port(scale.host, scale.port) as port:
        host = f"[{scale.host}]" if ":" in scale.host else scale.host
        url = f"http://{host}:{port}"
        deadline = time.monotonic() + timeout_s
        http_options = {"host": scale.host, "port": port, "request_timeout_s": config.time_limit_s + 30}
        proxy_late = False
        try:
            serve.start(http_options=http_options)
        except TimeoutError:  # Serve gives its proxy a fixed 60 s; its controller is up and is reused
            proxy_late = True
            serve.start(http_options=http_options)
        try:
            serve.run(deployment(config, scale), name=APP_NAME, route_prefix="/", blocking=False)
            _wait_running(serve, timeout_s)
            if scale.port == 0 or proxy_late:
                _wait_proxy(url, deadline)  # the port is let go only once the proxy listens on it
        except BaseException:
            stop(cluster)
            raise
    return url


@contextlib.contextmanager
def reserved_port(host: str, port: int) -> Iterator[int]:
    """``port``, or for 0 a free port the system picks, held (bound, not listening) until the block ends.

    Serve's proxy binds its port itself, in another process, with SO_REUSEPORT (Serve's default): a
    socket of ours bound with SO_REUSEPORT alone lets the proxy (same user, SO_REUSEPORT) bind the port
    too, while any other socket (SO_REUSEADDR or none) is refused it; ours takes no connections (it
    does not listen). With reuse turned off in Serve, the port is only picked here and let go before
    Serve starts."""
    if port != 0:
        yield port
        return

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        if hasattr(socket, "SO_REUSEPORT"):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, 0))
        picked = sock.getsockname()[1]
        if os.environ.get("SERVE_SOCKET_REUSE_PORT_ENABLED", "1") != "1" or not hasattr(socket, "SO_REUSEPORT"):
            sock.close()
        yield picked
    finally:
        sock.close()


def _wait_proxy(url: str, deadline: float) -> None:
    """Until Serve's proxy answers its health route at ``url``."""

    # lazy: start-up (httpx)
    import httpx

    while True:
        try:
            if httpx.get(f"{url}/-/healthz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise UserError(f"Serve's proxy did not answer at {url}")
        time.sleep(0.2)


def _wait_running(serve: ModuleType, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app = serve.status().applications.get(APP_NAME)
        state = str(getattr(app, "status", "")) if app is not None else ""
        if state.endswith("RUNNING"):
            return
        if state.endswith("DEPLOY_FAILED") or state.endswith("UNHEALTHY"):
            raise UserError(f"the replicas did not start: {_first(getattr(app, 'message', '') or state)}")
        time.sleep(0.5)
    raise UserError(f"the replicas were not ready within {timeout_s:.0f} s")


def _first(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[-1] if lines else str(text)


def undeploy() -> None:
    """Delete the application (its replicas); Serve's proxy stays."""
    try:
        import_serve().delete(APP_NAME)
    except Exception:  # noqa: BLE001 - already gone
        pass


def stop(cluster: Cluster) -> None:
    """Delete the application; on a private local instance also stop Serve and Ray."""
    serve = import_serve()
    undeploy()
    if cluster.started:
        serve.shutdown()
    cluster.close()
