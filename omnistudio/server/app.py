"""What the routes share (the routes themselves: :mod:`omnistudio.server.routers`, assembled by
:func:`omnistudio.server.factory.build_server`): thin, each one a request -> take -> sink.

Routes check the request (:mod:`jobs`), admit it (:class:`Admission`, 429 when full), start its
take (:class:`TakeRun` over the shared :class:`BatchingLink`) and turn the take's events into bytes
(:mod:`encode`). Every error is OpenAI's JSON error shape with one line of message.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.requests import ClientDisconnect, HTTPConnection

from omnistudio.protocol import MAX_BODY_BYTES, ProtocolError, error_body, error_kind, loads_object
from omnistudio.protocol.base import Body, first_problem
from omnistudio.server.admission import Admission
from omnistudio.server.jobs import SpeechJob
from omnistudio.server.metrics import Metrics
from omnistudio.server.pipeline import TakeCache
from omnistudio.server.scheduler import BatchingLink
from omnistudio.server.serving import Done, Failed, TakeRun

if TYPE_CHECKING:
    from omnistudio.engine.engine import Engine


@dataclass
class ServerState:
    """What the routes share: the link (None until the engine is ready), admission, keys, metrics."""

    max_queue: int = 16
    time_limit_s: float = 300.0
    max_voices: int = 64  # custom voices POST /v1/audio/voices keeps (serve --max-voices)
    keys: tuple[bytes, ...] = ()
    status: str = "loading"  # loading -> warming -> ready (or failed)
    detail: str = ""
    link: BatchingLink | None = None
    engine: Engine | None = None  # the engine this server opened (None: it renders elsewhere, or not yet)
    metrics: Metrics = field(default_factory=Metrics)
    cache: TakeCache = field(default_factory=lambda: TakeCache(0))  # shared by every request (serve --cache-mb)

    def __post_init__(self) -> None:
        self.admission = Admission(self.max_queue)

    def count_cancel(self) -> None:
        """A request cancelled (client gone, a cancel message, the time limit): every route and /mcp count here."""
        self.metrics.cancelled.inc()

    def forget_voice(self, anchor: str) -> None:
        """The voice ``anchor`` changed (replaced or removed): the engine forgets its prompts and blends, and
        every cached take goes (a take of the old voice must not answer for the new one). The one forget of
        the server and its /mcp tools."""
        if self.link is not None:
            self.link.forget_voice(anchor)
        self.cache.clear()


CLIENT_CLOSED = 499  # nginx's status for a client that went away before its answer (counted, never sent)


class HTTPError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.headers = status, headers or {}


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    # what cannot be UTF-8 (a client's lone surrogate quoted back) is escaped: an error never fails itself
    message = message.encode("utf-8", "backslashreplace").decode("utf-8") if message else message
    return JSONResponse(error_body(message.splitlines()[0] if message else "error", error_kind(status),
                                     code=str(status)),
                        status_code=status, headers=headers)


def validation_line(exc: ValidationError | RequestValidationError) -> str:
    return first_problem(exc, "request", omit=("body",))


async def read_json(request: Request, model: type[Body]) -> Body:
    parts, size = [], 0
    try:
        async for part in request.stream():  # counted as it arrives: a chunked body has no length header
            size += len(part)
            if size > MAX_BODY_BYTES:
                raise HTTPError(413, f"the request body is over {MAX_BODY_BYTES} bytes")
            parts.append(part)
    except ClientDisconnect:  # the client went away mid-body: nobody to answer, nothing to render
        raise HTTPError(CLIENT_CLOSED, "the client closed the connection before its request body ended") from None
    try:
        data = loads_object(b"".join(parts))
    except ProtocolError as exc:
        raise HTTPError(400, str(exc)) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise HTTPError(400, validation_line(exc)) from None


def server_state(conn: HTTPConnection) -> ServerState:
    """The state of the app serving ``conn`` (set by :func:`omnistudio.server.factory.build_server`)."""
    state: ServerState = conn.app.state.server
    return state


def current_link(state: ServerState) -> BatchingLink:
    if state.link is None:
        raise HTTPError(503, f"the engine is {state.status}; retry shortly", {"Retry-After": "2"})
    return state.link


async def start_take(state: ServerState, request: Request, job: SpeechJob) -> TakeRun:
    shared = current_link(state)
    state.admission.enter()
    run = TakeRun(shared, job, state.time_limit_s, cache=state.cache)
    request.state.take = run
    return run.start(asyncio.get_running_loop())


def finish(state: ServerState, run: TakeRun) -> None:
    state.admission.leave()
    if run.ttfa_s is not None and run.audio_s:
        state.metrics.ttfa.observe(run.ttfa_s)
        state.metrics.rtf.observe(run.wall_s / run.audio_s if run.wall_s else 0.0)
        state.metrics.audio_seconds.inc(run.audio_s)


async def first_events(state: ServerState, request: Request, run: TakeRun,
                       until: tuple[type, ...]) -> tuple[list[Any], Any]:
    """Events up to the first of ``until`` (the response status depends on it); a client that
    leaves meanwhile cancels the take."""
    seen: list[Any] = []
    events = run.events()
    while True:
        task = asyncio.ensure_future(events.__anext__())
        while not task.done():
            await asyncio.wait([task], timeout=0.05)
            if not task.done() and await request.is_disconnected():
                run.cancel.set()
        event = task.result()
        seen.append(event)
        if isinstance(event, Failed):
            if event.status in (499, 504):  # cancelled by the client, or by the time limit
                state.count_cancel()
            finish(state, run)
            raise HTTPError(event.status, event.message)
        if isinstance(event, until):
            return seen, events


class StoppedMidway(Exception):
    """The take failed after its response had begun: the status is sent, a short body tells the client."""


async def events_after(seen: list[Any], events: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """A streamed response's events: those :func:`first_events` saw, then the rest up to ``Done``; a
    ``Failed`` on the way raises :class:`StoppedMidway`."""
    for event in seen:
        yield event
    if seen and isinstance(seen[-1], Done):
        return
    async for event in events:
        if isinstance(event, Failed):
            raise StoppedMidway(event.message)
        yield event


async def streamed(state: ServerState, run: TakeRun, body: AsyncIterator[Any]) -> AsyncGenerator[Any, None]:
    """``body`` as a response streams it, the take finished after it; a client that leaves before its end,
    or a take that stops midway, cancels the take (and counts as cancelled)."""
    completed = False
    try:
        async for piece in body:
            yield piece
        completed = True
    except StoppedMidway:
        pass
    finally:
        if not completed:
            run.cancel.set()
            state.count_cancel()
        finish(state, run)


def link_info(state: ServerState) -> dict[str, object]:
    if state.link is None:
        return {}
    return {**asdict(state.link.info), "max_batch": state.link.max_batch}


__all__ = ["ServerState", "HTTPError", "error_response", "read_json", "server_state", "current_link", "start_take",
           "finish", "first_events", "events_after", "streamed", "StoppedMidway", "link_info"]
