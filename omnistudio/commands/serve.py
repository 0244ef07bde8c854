"""`omnistudio serve`: the speech server (OpenAI-compatible /v1/audio/speech, the whole-take /tts/* routes
and the stream-omni WebSocket) over the take pipeline; one engine worker owns the model."""

from __future__ import annotations

import argparse
import dataclasses
import errno
import socket
import threading
from pathlib import Path

from omnistudio.commands.flags.ray import actor_threads, add_serve_options, check_serve_options
from omnistudio.commands.serve_ray import run_serve
from omnistudio.config import compile_choice
from omnistudio.errors import UserError
from omnistudio.flags.engine import add_model_options, engine_config
from omnistudio.server.admission import Admission
from omnistudio.server.auth import check_bind
from omnistudio.server.factory import ServerConfig, build_server


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="speech server: OpenAI /v1/audio/speech, /tts/generate, WebSocket stream")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; any other "
                   "needs --api-key-file)")
    p.add_argument("--port", type=int, default=8005, help="TCP port (default 8005; 0: one the system picks, "
                   "printed in the 'serving on' line)")
    p.add_argument("--api-key-file", type=Path, help="file with one API key per line (Authorization: Bearer KEY)")
    p.add_argument("--max-queue", type=int, default=16, help="requests in flight before 429 (default 16)")
    p.add_argument("--max-batch", type=int, default=8, help="sentences of concurrent requests per diffusion "
                   "pass (default 8; 1 turns cross-request batching off)")
    p.add_argument("--time-limit", type=float, default=300.0, help="seconds a request may take (default 300)")
    p.add_argument("--cache-mb", type=int, default=0, help="keep rendered sentences (up to this many MB of "
                   "float32 audio, least recently used out) so a repeated request with the same text, voice, seed "
                   "and options renders nothing; default 0: off")
    p.add_argument("--max-voices", type=int, default=64, help="custom voices POST /v1/audio/voices keeps before "
                   "it refuses a new one (default 64)")
    p.add_argument("--no-warm-up", dest="warm_up", action="store_false", help="skip the warm-up render")
    p.add_argument("--mcp-output-dir", type=Path, metavar="DIR", help="the folder the MCP tools at /mcp write "
                   "into (default: mcp/ in the data folder)")
    add_model_options(p)

    add_serve_options(p)


def bind_port(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound and listening here (``port`` 0: a free port the system picks).

    The server is handed this very socket, so no other program can take the port between the check
    and the server starting, and the port is known (and printed) before the model loads."""
    if not 0 <= port <= 65535:
        raise UserError(f"port {port} is out of range 0..65535 (0: a free port the system picks)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # connections wait in the backlog until the server accepts them
    except OSError as exc:
        sock.close()
        why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror})"
        raise UserError(f"{host}:{port} {why}") from None
    return sock


def check_port(host: str, port: int) -> None:
    """One line when ``host:port`` cannot be listened on (Serve's proxy binds it itself, later)."""
    bind_port(host, port).close()


def server_config_from_args(args: argparse.Namespace) -> ServerConfig:
    """Every serve option, checked (one line each, before any model loads), as the server's config;
    the API keys are read from ``--api-key-file`` here."""
    # lazy: start-up (the model stack: omnistudio.engine.model and what it loads)
    from omnistudio.engine.model import pick_device

    keys = check_bind(args.host, args.api_key_file)
    Admission(args.max_queue)
    if not 1 <= args.max_batch <= 16:
        raise UserError(f"--max-batch {args.max_batch} is out of range 1..16")
    if not 1 <= args.time_limit <= 86_400:
        raise UserError(f"--time-limit {args.time_limit} is out of range 1..86400 s")
    if not 0 <= args.cache_mb <= 65_536:
        raise UserError(f"--cache-mb {args.cache_mb} is out of range 0..65536")
    if not 0 <= args.max_voices <= 10_000:
        raise UserError(f"--max-voices {args.max_voices} is out of range 0..10000")
    threads = None  # torch's own count in a single process
    if getattr(args, "ray", False):  # a replica's: this machine's count unless told (Ray would start it with 1)
        threads = actor_threads(getattr(args, "threads_per_replica", None), "--threads-per-replica")
    quantize = "none"
    if (args.quantize or "none") != "none":  # refused here (one line) where int8 would not run, before any load
        # lazy: start-up (torch)
        from omnistudio.engine.quantize import check_quantize

        quantize = check_quantize(args.quantize, pick_device(args.device))

    engine = engine_config(args, quantize=quantize, compile=compile_choice(),  # this command's environment,
                           threads=threads)  # carried to every replica
    return ServerConfig(engine=engine, max_batch=args.max_batch,
                        max_queue=args.max_queue, time_limit_s=args.time_limit, cache_mb=args.cache_mb, keys=keys,
                        max_voices=args.max_voices,
                        warm_up=args.warm_up, host=args.host, port=args.port,
                        mcp=not getattr(args, "ray", False),
                        mcp_output_dir=str(args.mcp_output_dir) if getattr(args, "mcp_output_dir", None) else None)


def run(args: argparse.Namespace) -> int:
    check_serve_options(args)
    config = server_config_from_args(args)  # every check before the model loads
    if args.ray:
        if args.address is None:  # a local instance: its proxy binds here
            check_port(args.host, args.port)
        elif args.port == 0:
            raise UserError("--port 0 picks a free port of this machine for a local instance: give a fixed "
                            "--port with --address")
        return run_serve(args, config)
    sock = bind_port(args.host, args.port)  # a port in use or out of range: one line before the server's imports
    # lazy: start-up (uvicorn); looked up when called (tests replace it)
    import uvicorn

    # lazy: looked up when called (tests replace it)
    from omnistudio.server.startup import start_engine

    config = dataclasses.replace(config, port=sock.getsockname()[1])  # the port bound (the one picked for 0)
    app = build_server(config)
    state = app.state.server
    server = uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port, log_level="warning",
                                           access_log=False, lifespan="off", ws="websockets-sansio"))
    threading.Thread(target=start_engine, args=(config, state, server), name="omnistudio-start", daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    if state.link is not None:
        state.link.close()
    if state.status == "failed":
        raise UserError(state.detail)
    return 0
