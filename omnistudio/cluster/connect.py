"""Joining a Ray cluster, and checking that a request fits before anything starts.

``address``: None starts a private local instance (this machine's CPUs and GPUs), ``auto`` joins
the cluster this machine belongs to (``ray start --head`` / ``ray start --address``), ``ray://host:port``
joins through Ray Client, ``host:port`` joins a head node's GCS directly. An unreachable address, a
request the cluster cannot hold, or Ray not installed: one :class:`UserError` line each, and a
local instance started for the request is stopped again.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType

from omnistudio.errors import UserError, first_line

INSTALL_HINT = "Ray is not installed: pip install 'omnistudio[ray]' (or pip install 'ray[serve]==2.60.0')"
REACH_TIMEOUT_S = 3.0


def import_ray() -> ModuleType:
    """The ``ray`` module, or one line saying how to install it (its functions are partly annotated, some
    not at all: the callers use it as a module, untyped)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        # lazy: an optional dependency
        import ray
    except ImportError:
        raise UserError(INSTALL_HINT) from None
    return ray


def import_serve() -> ModuleType:
    import_ray()
    try:
        # lazy: an optional dependency
        from ray import serve
    except ImportError:
        raise UserError(INSTALL_HINT) from None
    return serve


@dataclass(frozen=True)
class Need:
    """What a request asks of the cluster: ``count`` actors of ``cpus`` CPUs and ``gpus`` GPUs each."""

    count: int
    cpus: float
    gpus: float
    what: str = "replicas"

    def __post_init__(self) -> None:
        if self.count < 1:
            raise UserError(f"--{self.what} must be at least 1, got {self.count}")
        if self.cpus <= 0:
            raise UserError(f"CPUs per {self.what[:-1]} must be more than 0, got {self.cpus:g}")
        if self.gpus < 0:
            raise UserError(f"GPUs per {self.what[:-1]} must not be negative, got {self.gpus:g}")


def set_local_env() -> None:
    """Environment for a Ray instance started from this process (its workers and Serve's proxy inherit
    it): no usage reporting, and the proxy's replica-loss middleware. A cluster sets the same at `ray start`."""
    # lazy: start-up (pydantic)
    from omnistudio.cluster.proxy import CALLBACK_ENV, CALLBACK_PATH

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault(CALLBACK_ENV, CALLBACK_PATH)
    # Serve kills a proxy not ready in 5 s (health checks time out after 10 s): on a small or busy
    # machine a local proxy can take longer to start, so it gets a minute (a cluster sets its own).
    os.environ.setdefault("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "60")
    os.environ.setdefault("RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S", "60")


def check_address(address: str | None) -> str | None:
    """A cheap reachability check of ``host:port`` / ``ray://host:port`` (``auto`` and None pass)."""
    if address is None or address == "auto":
        return address
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UserError(f"--address '{address}' must be auto, ray://HOST:PORT or HOST:PORT")
    try:
        with socket.create_connection((host, int(port)), timeout=REACH_TIMEOUT_S):
            pass
    except OSError as exc:
        raise UserError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None
    return address


@contextlib.contextmanager
def _quiet_stderr(quiet: bool) -> Iterator[None]:
    """Ray's C++ client logs each failed attempt to join straight to file descriptor 2; hold them back."""
    if not quiet:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


class Cluster:
    """A connection to Ray for one command. ``close()`` stops only what this object started."""

    def __init__(self, address: str | None = None, local_cpus: float | None = None) -> None:
        self.ray = import_ray()
        self.address = check_address(address)
        self.started = False  # True when this object started Ray (a local instance or a client session)
        if self.ray.is_initialized():
            return  # a test or an embedding program already joined one: use it
        kwargs: dict[str, object] = {"include_dashboard": False, "log_to_driver": False,
                                     "logging_level": "ERROR", "configure_logging": True}
        if self.address is None and local_cpus is not None:
            kwargs["num_cpus"] = local_cpus
        if self.address is None:
            set_local_env()
        try:
            with warnings.catch_warnings(), _quiet_stderr(self.address is not None):
                warnings.simplefilter("ignore")  # Ray warns and retries on stderr before it raises: one line is ours
                self.ray.init(address=self.address, **kwargs)
        except (ConnectionError, TimeoutError, RuntimeError) as exc:
            raise UserError(f"cannot join the Ray cluster at {address}: {first_line(exc)}") from None
        self.started = True

    def resources(self) -> dict[str, float]:
        return dict(self.ray.cluster_resources())

    def check_fits(self, need: Need) -> None:
        """One line when ``need`` cannot be placed on the cluster as it is now (nothing is started)."""
        have = self.resources()
        for key, per in (("GPU", need.gpus), ("CPU", need.cpus)):
            total = have.get(key, 0.0)
            if per and per * need.count > total + 1e-9:
                raise UserError(f"{need.count} {need.what} x {per:g} {key} need {per * need.count:g} {key}s "
                                f"but the cluster has {total:g}")

    def close(self) -> None:
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()
        self.started = False

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

