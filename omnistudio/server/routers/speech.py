"""OpenAI's speech routes: ``POST /v1/audio/speech`` (every format, streamed while rendering, or SSE)
and ``GET /v1/models``."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from omnistudio.errors import UserError
from omnistudio.server import encode
from omnistudio import protocol as wire
from omnistudio.server import jobs
from omnistudio.server.app import finish, first_events, link_info, read_json, server_state, start_take
from omnistudio.server.serving import Audio, Done, Failed

router = APIRouter()


@router.post("/v1/audio/speech")
async def speech(request: Request) -> Response:
    state = server_state(request)
    req = await read_json(request, wire.SpeechRequest)
    fmt = jobs.check_format(req.response_format)
    if req.stream_format not in ("audio", "sse"):
        raise UserError(f"stream_format '{req.stream_format}' is not supported: use audio or sse")
    job = jobs.speech_job(req)
    run = await start_take(state, request, job)
    streaming = fmt in encode.STREAMABLE and job.target_lufs is None
    seen, events = await first_events(state, request, run, (Audio, Done) if streaming else (Done,))

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
            finish(state, run)

    if req.stream_format == "sse":
        return StreamingResponse(_sse(chunks()), media_type="text/event-stream")
    return StreamingResponse(chunks(), media_type=encode.MEDIA_TYPES[fmt])


@router.get("/v1/models")
async def models(request: Request) -> dict[str, Any]:
    info = link_info(server_state(request))
    return {"object": "list", "data": [{"id": wire.MODEL_ID, "object": "model", "created": 0,
                                        "owned_by": "omnistudio", "omnistudio": info}]}


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
