"""The MCP tools over streamable HTTP at ``/mcp`` of ``omnistudio serve``: the same tools as
``omnistudio mcp``, rendering through the server's shared link under its admission limit, behind the
server's API keys (the Guard middleware wraps this route like every other one).

The server runs without an ASGI lifespan, so the SDK's session manager (which must be running while
it handles requests) is started on the first request to ``/mcp``, in the server's event loop, and
runs as long as the server does.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from omnistudio.config import locations
from omnistudio.errors import Unavailable, UserError, ran_past
from omnistudio.mcp.folder import OutputFolder

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.types import Receive, Scope, Send

    from omnistudio.take.link import EngineLink

MCP_ROUTE = "/mcp"


class _Admission(Protocol):
    def enter(self) -> None: ...

    def leave(self) -> None: ...


class ServedState(Protocol):
    """What the tools read of the server's state (its ``ServerState``): its link, status, admission, time
    limit, its one forget and its count of cancelled requests."""

    @property
    def link(self) -> EngineLink | None: ...

    @property
    def status(self) -> str: ...

    @property
    def admission(self) -> _Admission: ...

    @property
    def time_limit_s(self) -> float: ...

    def forget_voice(self, anchor: str) -> None: ...

    def count_cancel(self) -> None: ...


class ServerBackend:
    """The server's engine: its shared link (503's line until it is ready) and its admission."""

    asr_model: Path | None = None

    def __init__(self, state: ServedState) -> None:
        self.state = state

    def link(self, progress: Callable[[str], None] | None = None) -> EngineLink:
        if self.state.link is None:
            raise Unavailable(f"the engine is {self.state.status}; retry shortly")
        return self.state.link

    @contextmanager
    def _admission(self, cancel: threading.Event) -> Iterator[None]:
        """The server's admission and time limit, as ``/v1/audio/speech`` has them: past ``--time-limit``
        the take is cancelled (within one diffusion step) and ends with the same line."""
        try:
            self.state.admission.enter()
        except Exception as exc:  # Busy: the server's queue is full
            raise UserError(str(exc)) from None
        limit = float(self.state.time_limit_s)
        timed_out = threading.Event()

        def time_up() -> None:
            timed_out.set()
            cancel.set()

        timer = threading.Timer(limit, time_up)
        timer.daemon = True
        timer.start()
        try:
            yield
        except BaseException:
            if cancel.is_set():  # the client's cancel or the time limit: counted as the routes count theirs
                self.state.count_cancel()
            if timed_out.is_set():
                raise UserError(ran_past(limit)) from None
            raise
        finally:
            timer.cancel()
            self.state.admission.leave()

    def admitted(self, cancel: threading.Event) -> AbstractContextManager[None]:
        return self._admission(cancel)

    def forget(self, anchor: str) -> None:
        self.state.forget_voice(anchor)  # the server's one forget: the engine's prompts and blends, cached takes


class LazySessions:
    """The SDK's session manager as an ASGI app, started on its first request."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager
        self._ready: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def _keep(self) -> None:
        assert self._ready is not None
        async with self.manager.run():
            self._ready.set()
            await asyncio.Event().wait()  # for as long as the server runs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._ready is None:
            self._ready = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._keep())
        await self._ready.wait()
        await self.manager.handle_request(scope, receive, send)


def mount_mcp(app: FastAPI, state: ServedState, output_dir: str | None, loopback: bool) -> None:
    """Add ``/mcp`` to the server ``app`` (state: its ServerState). ``loopback``: the server is bound
    to a loopback address, where the SDK's DNS-rebinding protection applies (a browser page must not
    reach a keyless local server); elsewhere the API keys guard it."""
    # lazy: start-up (anyio, mcp, pydantic, starlette)
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.routing import Route

    # lazy: start-up (anyio, mcp, pydantic)
    from omnistudio.mcp.tools import build_mcp

    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=loopback,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
    server = build_mcp(ServerBackend(state), OutputFolder(Path(output_dir) if output_dir else default_folder()),
                       transport_security=security, streamable_http_path=MCP_ROUTE)
    server.streamable_http_app()  # makes the session manager
    app.router.routes.append(Route(MCP_ROUTE, endpoint=LazySessions(server.session_manager)))
    quiet_client_exits()


class _ClientLeft(logging.Filter):
    """The SDK logs a session whose client left without ending it (its stream closed) as a traceback: it is
    a client going away, said in one debug line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if type(error).__name__ in ("ClosedResourceError", "BrokenResourceError", "EndOfStream"):
            logging.getLogger("omnistudio.mcp").debug("an /mcp client left its session (%s)", type(error).__name__)
            return False
        return True


def quiet_client_exits() -> None:
    """Install :class:`_ClientLeft` on the SDK's transport loggers (once)."""
    for name in ("mcp.server.streamable_http", "mcp.server.streamable_http_manager"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _ClientLeft) for f in logger.filters):
            logger.addFilter(_ClientLeft())


NO_MCP_ON_RAY = ("serve --ray has no MCP tools at /mcp: an MCP session, its cancel and the files its tools write "
                 "live in one process, and each request may reach another replica; use omnistudio serve without "
                 "--ray for /mcp")


def refuse_mcp(app: FastAPI) -> None:
    """``/mcp`` on a server built without the tools (every ``serve --ray`` replica): a 404 in the API's
    JSON error shape that says why, for every method the transport uses, rather than a bare Not Found."""
    # lazy: start-up (pydantic, starlette)
    from starlette.responses import JSONResponse

    # lazy: start-up (pydantic)
    from omnistudio.protocol import error_body, error_kind

    async def no_mcp() -> Any:  # (FastAPI reads this annotation; the response class is imported here)
        return JSONResponse(error_body(NO_MCP_ON_RAY, error_kind(404), code="404"), status_code=404)

    app.add_api_route(MCP_ROUTE, no_mcp, methods=["GET", "POST", "DELETE"], include_in_schema=False)


def default_folder() -> Path:
    """Where the tools write when no folder is configured: ``mcp`` in the program's data folder."""

    return locations().data / "mcp"
