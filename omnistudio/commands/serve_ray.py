"""``serve --ray``: the speech server as a Ray Serve deployment, one engine per replica (the flags:
:mod:`omnistudio.commands.flags.ray`). Ray is imported only when ``--ray`` is given."""

from __future__ import annotations

import argparse
import time

from omnistudio.server.factory import ServerConfig


def run_serve(args: argparse.Namespace, config: ServerConfig) -> int:
    """``serve --ray``: deploy, print where, serve until Ctrl+C, then take the deployment down."""

    # lazy: start-up (pydantic, rich); looked up when called (tests replace it)
    from omnistudio.cluster import serve as cluster_serve
    from omnistudio.cluster.connect import Cluster, Need, import_serve
    from omnistudio.console import err_console

    import_serve()
    scale_args = dict(replicas=1 if args.replicas is None else args.replicas,
                      cpus=1.0 if args.cpus_per_replica is None else args.cpus_per_replica,
                      gpus=args.gpus_per_replica or 0.0, min_replicas=args.min_replicas,
                      max_replicas=args.max_replicas, host=args.host, port=args.port)
    cluster_serve.Scale(**scale_args)  # every value checked before Ray starts (the port: by the caller)
    # ``config`` (commands.serve.server_config_from_args) is what every replica builds its server from
    cluster = Cluster(args.address)
    try:
        if args.gpus_per_replica is None and cluster.resources().get("GPU") and args.device != "cpu":
            scale_args["gpus"] = 1.0
        scale = cluster_serve.Scale(**scale_args)
        cluster.check_fits(Need(scale.first, scale.cpus, scale.gpus))
    except BaseException:
        cluster.close()  # nothing was deployed: leave nothing running
        raise
    try:
        with err_console.status(f"starting {scale.first} replicas"):
            url = cluster_serve.start(cluster, config, scale)
        err_console.print(f"omnistudio: serving on {url} with {scale.first} replicas "
                          f"({scale.cpus:g} CPU, {scale.gpus:g} GPU each); Ctrl+C stops", markup=False,
                          highlight=False)
        while True:
            time.sleep(1.0)
    finally:
        cluster_serve.stop(cluster)
