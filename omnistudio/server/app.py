"""The HTTP and WebSocket routes: thin, each one a request -> take -> sink.

Routes check the request (:mod:`protocol`), admit it (:class:`Admission`, 429 when full), start its
take (:class:`TakeRun` over the shared :class:`BatchingLink`) and turn the take's events into bytes
(:mod:`encode`). Every error is OpenAI's JSON error shape with one line of message.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ValidationError

from omnistudio.errors import UserError
from omnistudio.server import encode
from omnistudio.server import protocol as p
from omnistudio.server.metrics import CONTENT_TYPE, Metrics
from omnistudio.server.pipeline import TakeCache
from omnistudio.server.scheduler import Admission, BatchingLink, Busy
from omnistudio.server.serving import Audio, Done, Failed, SentenceEnd, SentenceStart, TakeRun


@dataclass
class ServerState:
    """What the routes share: the link (None until the engine is ready), admission, keys, metrics."""

    max_queue: int = 16
    time_limit_s: float = 300.0
    keys: tuple[bytes, ...] = ()
    status: str = "loading"  # loading -> warming -> ready (or failed)
    detail: str = ""
    link: BatchingLink | None = None
    metrics: Metrics = field(default_factory=Metrics)
    cache: TakeCache = field(default_factory=lambda: TakeCache(0))  # shared by every request (serve --cache-mb)

    def __post_init__(self) -> None:
        self.admission = Admission(self.max_queue)


class HTTPError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.headers = status, headers or {}


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return JSONResponse(p.error_body(message.splitlines()[0] if message else "error", kind, code=str(status)),
                        status_code=status, headers=headers)


def _validation_line(exc: ValidationError | RequestValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(x) for x in first.get("loc", ()) if x != "body") or "request"
    return f"{where}: {first.get('msg', 'invalid')}"


async def read_json(request: Request, model: type[BaseModel]) -> Any:
    parts, size = [], 0
    async for part in request.stream():  # counted as it arrives: a chunked body has no length header
        size += len(part)
        if size > p.MAX_BODY_BYTES:
            raise HTTPError(413, f"the request body is over {p.MAX_BODY_BYTES} bytes")
        parts.append(part)
    raw = b"".join(parts)
    try:
        data = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError):
        raise HTTPError(400, "the request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise HTTPError(400, "the request body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise HTTPError(400, _validation_line(exc)) from None


def create_app(state: ServerState) -> FastAPI:
    from omnistudio import __version__

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
        return error_response(400, _validation_line(exc))

    def link() -> BatchingLink:
        if state.link is None:
            raise HTTPError(503, f"the engine is {state.status}; retry shortly", {"Retry-After": "2"})
        return state.link

    async def start_take(request: Request, job: p.SpeechJob) -> TakeRun:
        shared = link()
        state.admission.enter()
        run = TakeRun(shared, job, state.time_limit_s, cache=state.cache)
        request.state.take = run
        return run.start(asyncio.get_running_loop())

    def finish(run: TakeRun) -> None:
        state.admission.leave()
        if run.ttfa_s is not None and run.audio_s:
            state.metrics.ttfa.observe(run.ttfa_s)
            state.metrics.rtf.observe(run.wall_s / run.audio_s if run.wall_s else 0.0)
            state.metrics.audio_seconds.inc(run.audio_s)

    async def first_events(request: Request, run: TakeRun, until: tuple[type, ...]) -> tuple[list[Any], Any]:
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
                if event.status == 499:
                    state.metrics.cancelled.inc()
                finish(run)
                raise HTTPError(event.status, event.message)
            if isinstance(event, until):
                return seen, events

    # --------------------------------------------------------------- OpenAI
    @app.post("/v1/audio/speech")
    async def speech(request: Request) -> Response:
        req = await read_json(request, p.SpeechRequest)
        fmt = p.check_format(req.response_format)
        if req.stream_format not in ("audio", "sse"):
            raise UserError(f"stream_format '{req.stream_format}' is not supported: use audio or sse")
        job = p.speech_job(req)
        run = await start_take(request, job)
        streaming = fmt in encode.STREAMABLE and job.target_lufs is None
        seen, events = await first_events(request, run, (Audio, Done) if streaming else (Done,))

        async def chunks() -> Any:
            completed = False
            stream = encode.StreamEncoder(fmt, run.link.sample_rate) if streaming else None
            try:
                if stream is not None and (head := stream.start()):
                    yield head
                for event in seen:
                    if piece := _bytes(event, fmt, stream, run.link.sample_rate):
                        yield piece
                if not isinstance(seen[-1], Done):
                    async for event in events:
                        if isinstance(event, Failed):
                            return  # the status is sent; a short body tells the client
                        if piece := _bytes(event, fmt, stream, run.link.sample_rate):
                            yield piece
                completed = True
            finally:
                if not completed:
                    run.cancel.set()
                    state.metrics.cancelled.inc()
                finish(run)

        if req.stream_format == "sse":
            return StreamingResponse(_sse(chunks()), media_type="text/event-stream")
        return StreamingResponse(chunks(), media_type=encode.MEDIA_TYPES[fmt])

    @app.get("/v1/audio/voices")
    async def voices() -> dict[str, Any]:
        from omnistudio.server.listing import voice_listing

        return voice_listing(await asyncio.to_thread(link().voices))

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        info = link_info(state)
        return {"object": "list", "data": [{"id": p.MODEL_ID, "object": "model", "created": 0,
                                            "owned_by": "omnistudio", "omnistudio": info}]}

    @app.get("/health")
    async def health() -> JSONResponse:
        body = {"status": state.status, "detail": state.detail, "active": state.admission.active,
                "max_queue": state.admission.max_queue}
        if state.link is not None:
            body["engine"] = link_info(state)
        return JSONResponse(body, status_code=200 if state.status == "ready" else 503)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(state.metrics.render(state.link, state.admission.active, state.cache),
                        media_type=CONTENT_TYPE)

    # ------------------------------------------------------- the seed's routes
    async def whole_take(request: Request, req: p.GenerateRequest) -> TakeRun:
        run = await start_take(request, p.generate_job(req))
        seen, _ = await first_events(request, run, (Done,))
        finish(run)
        run.done = seen[-1]  # type: ignore[attr-defined]
        return run

    @app.post("/tts/generate")
    async def generate(request: Request) -> Response:
        from omnistudio.audio.loudness import measure

        req = await read_json(request, p.GenerateRequest)
        run = await whole_take(request, req)
        body = encode.encode(run.done.pcm, run.link.sample_rate, "wav")  # type: ignore[attr-defined]
        report = measure(*encode.decode_wav(body))  # figures of the samples sent, not of the floats before
        headers = {"X-TTS-Loudness-LUFS": _header(report.integrated_lufs),
                   "X-TTS-True-Peak-dB": _header(report.true_peak_dbtp),
                   "X-TTS-Crest-Factor-dB": _header(report.crest_factor_db),
                   "X-TTS-RTF": _header(run.done.summary["rtf"] or 0.0),  # type: ignore[attr-defined]
                   "X-TTS-TTFA-s": _header(run.done.summary["ttfa_s"])}  # type: ignore[attr-defined]
        return Response(body, media_type="audio/wav", headers=headers)

    @app.post("/tts/generate-shm")
    async def generate_shm(request: Request) -> JSONResponse:
        from omnistudio.audio.shm import check_shm_name, write_shm

        req = await read_json(request, p.GenerateRequest)
        name = check_shm_name(req.name)  # before anything renders
        run = await whole_take(request, req)
        done: Done = run.done  # type: ignore[attr-defined]
        path = write_shm(name, done.pcm, run.link.sample_rate)
        return JSONResponse({"name": name, "path": str(path), "frames": int(len(done.pcm)),
                             "sample_rate": run.link.sample_rate, **done.summary})

    @app.websocket("/ws/tts/stream-omni")
    async def stream_omni(ws: WebSocket) -> None:
        from omnistudio.server.websocket import serve_session

        await serve_session(ws, state, link, finish)

    return app


def link_info(state: ServerState) -> dict[str, Any]:
    from dataclasses import asdict

    if state.link is None:
        return {}
    return {**asdict(state.link.info), "max_batch": state.link.max_batch}


def _header(value: float) -> str:
    return f"{value:.3f}" if value == value and abs(value) != float("inf") else "-inf"


def _bytes(event: Any, fmt: str, stream: encode.StreamEncoder | None, sample_rate: int) -> bytes:
    """What one take event adds to the response body: a streamed piece, or the whole file at the end."""
    if stream is not None:
        if isinstance(event, Audio) and len(event.pcm):
            return stream.audio(event.pcm)
        return stream.end() if isinstance(event, Done) else b""
    return encode.encode(event.pcm, sample_rate, fmt) if isinstance(event, Done) else b""


async def _sse(chunks: Any) -> Any:
    started = time.perf_counter()
    try:
        async for chunk in chunks:
            yield encode.sse_delta(chunk)
        yield encode.sse("speech.audio.done", usage={"wall_s": round(time.perf_counter() - started, 4)})
    finally:
        await chunks.aclose()


__all__ = ["ServerState", "create_app", "HTTPError", "WebSocketDisconnect", "SentenceEnd", "SentenceStart"]
