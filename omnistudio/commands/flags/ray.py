"""The ``--ray`` option groups of ``render`` and ``serve`` (their runs on Ray:
:mod:`omnistudio.commands.render_ray`, :mod:`omnistudio.commands.serve_ray`).

Nothing here imports Ray: it is imported when ``--ray`` is given (and a missing Ray is one line
saying how to install it).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from omnistudio.errors import UserError


def add_address_option(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--address", default=None, help="Ray cluster: auto (the one this machine joined), "
                       "ray://HOST:10001 or HOST:6379 (default: a private local instance)")


def add_batch_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("many scripts on Ray (pip install 'omnistudio[ray]')")
    group.add_argument("--ray", action="store_true", help="render every SCRIPT on Ray actors that each hold "
                       "an engine; writes DIR/NAME.wav + NAME.wav.json, skipping scripts already done")
    group.add_argument("--out-dir", type=Path, default=None, help="folder for the outputs of --ray")
    add_address_option(group)
    group.add_argument("--workers", type=int, default=None, help="actors, each with its own engine "
                       "(default: one per GPU of the cluster, else 1)")
    group.add_argument("--gpus-per-worker", type=float, default=None, help="GPUs each worker holds "
                       "(default: 1 when the cluster has GPUs, else 0)")
    group.add_argument("--cpus-per-worker", type=float, default=1.0, help="CPUs each worker holds (default 1)")
    group.add_argument("--threads-per-worker", type=int, default=None, metavar="N", help="torch threads of each "
                       "worker (default: this machine's, so the files equal a local render bit for bit)")


def actor_threads(value: int | None, flag: str) -> int:
    """Torch threads for each Ray actor or replica: ``value`` (checked), else this process's own count, so
    it renders what a local render here renders, bit for bit (Ray starts it with OMP_NUM_THREADS=1)."""
    if value is not None:
        if value < 1:
            raise UserError(f"{flag} must be at least 1, got {value}")
        return value
    return local_threads()


def local_threads() -> int:
    """torch's thread count in this process (what a local render uses)."""
    # lazy: start-up (torch)
    import torch

    return int(torch.get_num_threads())


# ------------------------------------------------------------------- serve --ray
RAY_ONLY = ("replicas", "gpus_per_replica", "cpus_per_replica", "threads_per_replica", "min_replicas",
            "max_replicas", "address")


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scale-out on Ray Serve (pip install 'omnistudio[ray]')")
    group.add_argument("--ray", action="store_true", help="serve the same app as a Ray Serve deployment: "
                       "one engine per replica, Serve's proxy on --host/--port routes and streams")
    add_address_option(group)
    group.add_argument("--replicas", type=int, default=None, help="replicas, each with its own engine (default 1)")
    group.add_argument("--gpus-per-replica", type=float, default=None, help="GPUs each replica holds "
                       "(default: 1 when the cluster has GPUs, else 0)")
    group.add_argument("--cpus-per-replica", type=float, default=None, help="CPUs each replica holds (default 1)")
    group.add_argument("--threads-per-replica", type=int, default=None, metavar="N", help="torch threads of each "
                       "replica (default: this machine's, so answers equal a local render bit for bit)")
    group.add_argument("--min-replicas", type=int, default=None, help="autoscaling floor (with --max-replicas)")
    group.add_argument("--max-replicas", type=int, default=None, help="autoscaling ceiling (with --min-replicas)")


def check_serve_options(args: argparse.Namespace) -> None:
    """Without --ray, the Ray options are a mistake worth one line."""
    if not args.ray:
        given = [name for name in RAY_ONLY if getattr(args, name, None) is not None]
        if given:
            raise UserError(f"--{given[0].replace('_', '-')} needs --ray")
