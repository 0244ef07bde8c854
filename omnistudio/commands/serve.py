"""`omnistudio serve`: the speech server (OpenAI-compatible /v1/audio/speech, the seed's /tts/* routes
and the stream-omni WebSocket) over the take pipeline; one engine worker owns the model."""

from __future__ import annotations

import argparse
import errno
import socket
import threading
from pathlib import Path

from omnistudio.errors import UserError


def add_parser(sub: argparse._SubParsersAction) -> None:
    from omnistudio.cli import add_model_options

    p = sub.add_parser("serve", help="speech server: OpenAI /v1/audio/speech, /tts/generate, WebSocket stream")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; any other "
                   "needs --api-key-file)")
    p.add_argument("--port", type=int, default=8005, help="TCP port (default 8005)")
    p.add_argument("--api-key-file", type=Path, help="file with one API key per line (Authorization: Bearer KEY)")
    p.add_argument("--max-queue", type=int, default=16, help="requests in flight before 429 (default 16)")
    p.add_argument("--max-batch", type=int, default=8, help="sentences of concurrent requests per diffusion "
                   "pass (default 8; 1 turns cross-request batching off)")
    p.add_argument("--time-limit", type=float, default=300.0, help="seconds a request may take (default 300)")
    p.add_argument("--cache-mb", type=int, default=0, help="keep rendered sentences (up to this many MB of "
                   "float32 audio, least recently used out) so a repeated request with the same text, voice, seed "
                   "and options renders nothing; default 0: off")
    p.add_argument("--no-warm-up", dest="warm_up", action="store_false", help="skip the warm-up render")
    add_model_options(p)
    from omnistudio.commands.cluster_options import add_serve_options

    add_serve_options(p)


def check_port(host: str, port: int) -> None:
    if not 1 <= port <= 65535:
        raise UserError(f"port {port} is out of range 1..65535")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror})"
            raise UserError(f"{host}:{port} {why}") from None


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from omnistudio.server.app import ServerState, create_app
    from omnistudio.server.startup import start_engine
    from omnistudio.server.auth import check_bind
    from omnistudio.server.middleware import Guard
    from omnistudio.server.scheduler import Admission

    from omnistudio.commands.cluster_options import check_serve_options, run_serve

    check_serve_options(args)
    keys = check_bind(args.host, args.api_key_file)  # every check before the model loads
    Admission(args.max_queue)
    if not 1 <= args.max_batch <= 16:
        raise UserError(f"--max-batch {args.max_batch} is out of range 1..16")
    if not 1 <= args.time_limit <= 86_400:
        raise UserError(f"--time-limit {args.time_limit} is out of range 1..86400 s")
    if not 0 <= args.cache_mb <= 65_536:
        raise UserError(f"--cache-mb {args.cache_mb} is out of range 0..65536")
    if args.ray:
        if args.address is None:  # a local instance: its proxy binds here
            check_port(args.host, args.port)
        return run_serve(args, keys)
    check_port(args.host, args.port)
    from omnistudio.server.pipeline import TakeCache

    state = ServerState(max_queue=args.max_queue, time_limit_s=args.time_limit, keys=keys,
                        cache=TakeCache(args.cache_mb * 2**20))
    app = Guard(create_app(state), state)
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port, log_level="warning",
                                           access_log=False, lifespan="off", ws="websockets-sansio"))
    threading.Thread(target=start_engine, args=(args, state, server), name="omnistudio-start", daemon=True).start()
    server.run()
    if state.link is not None:
        state.link.close()
    if state.status == "failed":
        raise UserError(state.detail)
    return 0
