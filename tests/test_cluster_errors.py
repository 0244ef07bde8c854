"""`--ray` on bad input: Ray missing, 0 replicas, an unreachable address, more GPUs than the cluster has.

Each is one line on stderr, exit status 2, and nothing left started or written."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omnistudio.cli import main
from support.audio import REF_TEXT
from support.cli import one_line_error


@pytest.fixture(autouse=True)
def ray_environment() -> Iterator[None]:
    """What a Ray command puts in the environment (usage stats off, the proxy's middleware, Ray's own
    variables) is gone again after the test."""
    from support.server import restored_environ

    with restored_environ():
        yield


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port bound by this test and not listening: a connection to it is refused at once, and no other
    program can start listening on it while the test runs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def serve(*args: str) -> list[str]:
    return ["serve", "--ray", "--model", "tiny", "--device", "cpu", "--port", "0", *args]


def render(tmp_path: Path, ref_wav: Path, *args: str) -> list[str]:
    script = tmp_path / "s.txt"
    script.write_text("Good evening.\n", encoding="utf-8")
    return ["render", str(script), "--out-dir", str(tmp_path / "out"), "--ray", "--model", "tiny", "--device", "cpu",
            "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, *args]


def ray_running() -> bool:
    ray = sys.modules.get("ray")
    return bool(ray is not None and ray.is_initialized())


def test_without_ray_one_line_says_how_to_install(tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if it were not installed
    for argv in (serve(), render(tmp_path, ref_wav)):
        assert main(argv) == 2
        assert "pip install 'omnistudio[ray]'" in one_line_error(capsys)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--replicas", "0"], "--replicas must be at least 1"),
    (["--cpus-per-replica", "0"], "must be more than 0"),
    (["--min-replicas", "2"], "needs both --min-replicas and --max-replicas"),
    (["--min-replicas", "3", "--max-replicas", "2"], "below --min-replicas"),
    (["--address", "auto"], "give a fixed --port with --address"),  # --port 0 is for a local instance
])
def test_bad_scale_is_one_line_before_ray_starts(args: list[str], message: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ray")
    assert main(serve(*args)) == 2
    assert message in one_line_error(capsys)
    assert not ray_running()


def test_ray_options_without_ray_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--replicas", "2", "--model", "tiny"]) == 2
    assert "--replicas needs --ray" in one_line_error(capsys)


def test_unreachable_address_is_one_line_without_joining(tmp_path: Path, ref_wav: Path, refusing_port: int,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The cheap reachability check (one connection attempt with a timeout) answers before Ray is asked
    to join: ``ray.init`` on an unreachable address retries for minutes, so it must never run."""
    ray = pytest.importorskip("ray")
    from omnistudio.cluster import connect

    joins: list[Any] = []
    attempts: list[Any] = []
    real_connect = socket.create_connection

    def no_join(*args: Any, **kwargs: Any) -> None:
        joins.append(kwargs.get("address"))
        raise ConnectionError("ray.init was called")

    def counted_connect(address: Any, timeout: Any = None, *args: Any, **kwargs: Any) -> Any:
        attempts.append(timeout)
        return real_connect(address, timeout, *args, **kwargs)

    monkeypatch.setattr(ray, "init", no_join)
    monkeypatch.setattr(connect.socket, "create_connection", counted_connect)
    for argv in (serve("--port", "8005", "--address", f"ray://127.0.0.1:{refusing_port}"),
                 render(tmp_path, ref_wav, "--address", f"127.0.0.1:{refusing_port}")):
        assert main(argv) == 2
        assert f"cannot reach the Ray cluster at {argv[argv.index('--address') + 1]}" in one_line_error(capsys)
    assert joins == []  # Ray never tried to join
    assert attempts == [connect.REACH_TIMEOUT_S] * 2  # one bounded attempt per command
    assert not ray_running()
    assert not any((tmp_path / "out").glob("*.wav"))


def test_more_gpus_than_the_cluster_has(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ray = pytest.importorskip("ray")
    for argv in (serve("--replicas", "2", "--gpus-per-replica", "64", "--cpus-per-replica", "0.5"),
                 render(tmp_path, ref_wav, "--workers", "2", "--gpus-per-worker", "64", "--cpus-per-worker", "0.5")):
        assert main(argv) == 2
        err = one_line_error(capsys)
        assert "need 128 GPUs but the cluster has" in err, err
        assert not ray.is_initialized()  # the local instance started for the check is stopped again
    assert not any((tmp_path / "out").glob("*.wav"))


@pytest.mark.parametrize(("args", "message"), [
    (["--ray"], "give --serve --ray together"),
    (["--serve", "--ray", "--replicas", "0,2"], "counts must be at least 1"),
    (["--serve", "--ray", "--replicas", "one"], "counts separated by commas"),
])
def test_bench_serve_ray_bad_input(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ray")
    assert main(["bench", *args, "--model", "tiny"]) == 2
    assert message in one_line_error(capsys)
    assert not ray_running()


def test_autoscaling_bounds_reach_serve() -> None:
    from omnistudio.cluster.serve import ReplicaConfig, Scale

    fixed = Scale(replicas=3, cpus=0.5, gpus=1).deployment_options(ReplicaConfig(max_queue=12))
    assert fixed["num_replicas"] == 3 and "autoscaling_config" not in fixed
    assert fixed["ray_actor_options"] == {"num_cpus": 0.5, "num_gpus": 1} and fixed["max_ongoing_requests"] == 12
    auto = Scale(replicas=1, min_replicas=2, max_replicas=6).deployment_options(ReplicaConfig())
    assert "num_replicas" not in auto
    assert auto["autoscaling_config"]["min_replicas"] == 2 and auto["autoscaling_config"]["max_replicas"] == 6
    assert auto["autoscaling_config"]["initial_replicas"] == 2  # --replicas below the floor starts at the floor


@pytest.mark.parametrize(("args", "flag"), [
    (["--project", "{tmp}/p.omniproj"], "--project"),
    (["--verify"], "--verify"),
    (["--verify", "--retake", "2"], "--verify"),
    (["--retake", "2"], "--retake"),
])
def test_takes_flags_are_refused_not_ignored(args: list[str], flag: str, tmp_path: Path, ref_wav: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A batch keeps no takes: ``--project`` (its takes, manifest and lexicon) and ``--verify`` are refused
    in one line, with or without --ray, before Ray starts or anything is written (they used to be ignored)."""
    argv = render(tmp_path, ref_wav, *(a.replace("{tmp}", str(tmp_path)) for a in args))
    for line in (argv, [a for a in argv if a != "--ray"]):
        assert main(line) == 2
        err = one_line_error(capsys)
        assert err.startswith(f"omnistudio: error: {flag} does not combine with --ray"), err
    assert not ray_running()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.txt"]  # no project folder, no --out-dir
