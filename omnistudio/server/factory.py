"""The one server factory: :func:`build_server` turns a :class:`ServerConfig` into the app.

``omnistudio serve``, every replica of ``serve --ray`` and ``bench --serve`` build their app here:
the routers (:mod:`omnistudio.server.routers`), the error handlers (OpenAI's error shape) and the
guard (API keys, body size, one log line per request), around one :class:`ServerState`
(``app.state.server``). :class:`ServerConfig` holds every serve option as plain values, so it
travels to Ray replicas as it is; it is built from argparse only in ``omnistudio.commands``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from omnistudio import __version__
from omnistudio.engine.settings import EngineConfig
from omnistudio.errors import UserError
from omnistudio.server.admission import Busy
from omnistudio.server.auth import is_loopback

if TYPE_CHECKING:
    from fastapi import FastAPI


@dataclass(frozen=True)
class ServerConfig:
    """Every option of ``omnistudio serve`` a server (or a replica) is built from."""

    engine: EngineConfig = EngineConfig()  # model, device, dtype, --quantize, the compiled backbone
    # (OMNISTUDIO_COMPILE where the command runs), a Ray replica's torch threads (None: torch's default)
    max_batch: int = 8
    max_queue: int = 16
    time_limit_s: float = 300.0
    max_voices: int = 64  # custom voices POST /v1/audio/voices keeps (--max-voices)
    cache_mb: int = 0
    keys: tuple[bytes, ...] = ()  # read from --api-key-file (empty: no key asked for)
    warm_up: bool = True
    host: str = "127.0.0.1"
    port: int = 8005  # the port bound (named in the 'serving on' line)
    mcp: bool = True  # the MCP tools at /mcp (single-process serve); off (serve --ray): /mcp answers 404 saying why
    mcp_output_dir: str | None = None  # the folder the MCP tools write into (None: mcp/ in the data folder)


def build_server(config: ServerConfig) -> FastAPI:
    """The app: every route, the error handlers and the guard; its state (no engine yet, status
    ``loading``) is ``app.state.server``, published to by :func:`omnistudio.server.startup.start_engine`."""
    # lazy: start-up (asyncio, concurrent, fastapi, numpy, pydantic, pyebur128, scipy, starlette)
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    # lazy: start-up (asyncio, concurrent, fastapi, numpy, pydantic, pyebur128, scipy, starlette)
    from omnistudio.server.app import HTTPError, ServerState, error_response, validation_line
    from omnistudio.server.middleware import Guard
    from omnistudio.server.pipeline import TakeCache
    from omnistudio.server.routers import compat, consents, elevenlabs, ops, speech, text, voices, ws

    state = ServerState(max_queue=config.max_queue, time_limit_s=config.time_limit_s, keys=config.keys,
                        cache=TakeCache(config.cache_mb * 2**20), max_voices=config.max_voices)
    app = FastAPI(title="OmniStudio speech server", version=__version__, docs_url=None, redoc_url=None)
    app.state.server = state

    @app.exception_handler(HTTPError)
    async def _http_error(_r: Request, exc: HTTPError) -> JSONResponse:
        return error_response(exc.status, str(exc), exc.headers)

    @app.exception_handler(UserError)
    async def _user_error(_r: Request, exc: UserError) -> JSONResponse:
        return error_response(400, str(exc))

    @app.exception_handler(Busy)
    async def _busy(_r: Request, exc: Busy) -> JSONResponse:
        return error_response(429, str(exc), {"Retry-After": str(exc.retry_after_s)})

    @app.exception_handler(RequestValidationError)
    async def _invalid(_r: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, validation_line(exc))

    for router in (speech.router, voices.router, consents.router, text.router, ops.router, compat.router, ws.router,
                   elevenlabs.router):
        app.include_router(router)
    if config.mcp:
        # lazy: start-up (asyncio)
        from omnistudio.mcp.http import mount_mcp

        mount_mcp(app, state, config.mcp_output_dir, loopback=is_loopback(config.host))
    else:
        # lazy: start-up (asyncio)
        from omnistudio.mcp.http import refuse_mcp

        refuse_mcp(app)  # serve --ray: a 404 that says why (docs/decisions.md)
    app.add_middleware(Guard, state=state)  # keys and body size before any route runs
    return app
