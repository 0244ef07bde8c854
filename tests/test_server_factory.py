"""One server factory (issue 23): `serve --ray` ships the config `serve` parsed to every replica, and a
replica builds its server from it with :func:`omnistudio.server.factory.build_server` (no Ray started)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest


class _Shipped(Exception):
    pass


class _FakeCluster:
    started = False

    def __init__(self, address: Any) -> None:
        self.address = address

    def resources(self) -> dict[str, float]:
        return {"CPU": 8.0}

    def check_fits(self, _need: Any) -> None:
        pass

    def close(self) -> None:
        pass


def test_every_serve_option_reaches_a_ray_replica(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray.serve")
    from omnistudio.cli import build_parser
    from omnistudio.cluster import connect
    from omnistudio.cluster import serve as cluster_serve
    from omnistudio.commands import serve as serve_command
    from omnistudio.server import startup
    from omnistudio.server.factory import ServerConfig

    keys = tmp_path / "keys"
    keys.write_text("a-secret-of-24-chars-xyz\n")
    args = build_parser().parse_args([
        "serve", "--ray", "--host", "::1", "--port", "8123", "--api-key-file", str(keys), "--max-queue", "5",
        "--max-batch", "3", "--time-limit", "42", "--cache-mb", "64", "--no-warm-up", "--cpus-per-replica", "2",
        "--threads-per-replica", "2", "--model", "tiny", "--device", "cpu", "--dtype", "fp32", "--max-voices", "9",
        "--quantize", "int8",
        "--mcp-output-dir", str(tmp_path / "mcp")])
    shipped: dict[str, Any] = {}

    def start(_cluster: Any, config: Any, scale: Any, timeout_s: float = 0) -> str:
        shipped.update(config=config, scale=scale)
        raise _Shipped

    monkeypatch.setenv("OMNISTUDIO_COMPILE", "1")  # the driver's choice, not the replica machine's environment
    monkeypatch.setattr(serve_command, "check_port", lambda _h, _p: None)
    monkeypatch.setattr(connect, "Cluster", _FakeCluster)
    monkeypatch.setattr(cluster_serve, "start", start)
    monkeypatch.setattr(cluster_serve, "stop", lambda _c: None)
    with pytest.raises(_Shipped):
        serve_command.run(args)

    parsed = serve_command.server_config_from_args(args)
    config = shipped["config"]
    assert config == parsed
    defaults = ServerConfig()
    assert [f.name for f in dataclasses.fields(ServerConfig) if getattr(config, f.name) == getattr(defaults, f.name)] \
        == [], "every serve option given on the command line reaches the replica's config"
    engine = config.engine  # one engine settings value, every field of it from the command line
    assert [f.name for f in dataclasses.fields(engine) if getattr(engine, f.name) == getattr(defaults.engine, f.name)] \
        == ["sampler"]  # serve has no --sampler: the fast one
    assert (engine.model, engine.device, engine.dtype, engine.quantize) == ("tiny", "cpu", "fp32", "int8")
    assert (config.cache_mb, config.keys, engine.threads, engine.compile) == (64, (b"a-secret-of-24-chars-xyz",), 2, True)
    import torch  # without --threads-per-replica a replica runs this machine's count (a local render's)

    torch.set_num_threads(3)
    args.threads_per_replica = None
    assert serve_command.server_config_from_args(args).engine.threads == 3
    assert shipped["scale"].deployment_options(config)["max_ongoing_requests"] == 5

    def ready(cfg: Any, state: Any, _server: Any) -> None:
        assert cfg is config
        state.status = "ready"

    monkeypatch.setattr(startup, "start_engine", ready)
    replica = cluster_serve.SpeechReplica(config)
    state = replica.state
    assert replica.server_config == config and replica.server_app.state.server is state
    assert (state.cache.max_bytes, state.keys, state.time_limit_s, state.admission.max_queue) == \
        (64 * 2**20, (b"a-secret-of-24-chars-xyz",), 42.0, 5)
    from fastapi.testclient import TestClient

    from omnistudio.mcp.http import NO_MCP_ON_RAY

    web = TestClient(replica.server_app, headers={"Authorization": "Bearer a-secret-of-24-chars-xyz"})
    for method in ("POST", "GET", "DELETE"):  # the streamable HTTP transport's methods: a 404 that says why
        answer = web.request(method, "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize"})
        assert (answer.status_code, answer.json()["error"]["message"]) == (404, NO_MCP_ON_RAY), method
    assert web.get("/nothing-here").status_code == 404 and "MCP" not in web.get("/nothing-here").text
