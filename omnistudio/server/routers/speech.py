"""OpenAI's speech routes: ``POST /v1/audio/speech`` (every format, streamed while rendering, or SSE)
and ``GET /v1/models``.

With ``timestamps`` (``"sentence"`` or ``"word"``) the speech route answers JSON (:class:`~omnistudio.protocol.TimedSpeech`:
the file in base64 and each sentence's span and words) once the take is done, or, with ``stream_format: "sse"``,
a ``speech.sentence`` event (:class:`~omnistudio.protocol.SseSentence`) after each sentence's audio deltas."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncGenerator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from omnistudio.errors import UserError
from omnistudio.server import encode
from omnistudio import protocol as wire
from omnistudio.server import jobs
from omnistudio.server.app import (ServerState, events_after, finish, first_events, link_info, read_json, server_state,
                                   start_take, streamed)
from omnistudio.server.serving import Audio, Done, SentenceEnd, TakeRun
from omnistudio.server.timestamps import sentence_time
from omnistudio.server.voice_admin import design_voice

router = APIRouter()


@router.post("/v1/audio/speech")
async def speech(request: Request) -> Response:
    state = server_state(request)
    req = await read_json(request, wire.SpeechRequest)
    fmt = jobs.check_format(req.response_format)
    if req.stream_format not in ("audio", "sse"):
        raise UserError(f"stream_format '{req.stream_format}' is not supported: use audio or sse")
    design = await design_voice(state, req)  # "voice": "design" with instructions (else None; a 400 if misused)
    job = jobs.speech_job(req, design[0] if design else None)
    headers = design[1] if design else None
    run = await start_take(state, request, job)
    if job.timestamps is not None and req.stream_format == "audio":
        return await _timed(state, request, run, fmt, job.timestamps, headers)
    streaming = fmt in encode.STREAMABLE and job.target_lufs is None
    seen, events = await first_events(state, request, run, (Audio, Done) if streaming else (Done,))

    async def chunks() -> Any:  # bytes, and with SSE timestamps wire.SseSentence too
        stream = encode.StreamEncoder(fmt, run.link.sample_rate) if streaming else None
        if stream is not None and (head := stream.start()):
            yield head
        async for event in events_after(seen, events):
            if piece := _piece(event, fmt, stream, run.link.sample_rate, job.timestamps):
                yield piece

    if req.stream_format == "sse":
        return StreamingResponse(_sse(streamed(state, run, chunks())), media_type="text/event-stream", headers=headers)
    return StreamingResponse(streamed(state, run, chunks()), media_type=encode.MEDIA_TYPES[fmt], headers=headers)


async def _timed(state: ServerState, request: Request, run: TakeRun, fmt: str, mode: wire.Timestamps,
                 headers: dict[str, str] | None = None) -> JSONResponse:
    """The whole take as one JSON answer: the file in base64, and every sentence's span (and words)."""
    seen, _ = await first_events(state, request, run, (Done,))
    finish(state, run)
    done: Done = seen[-1]
    body = wire.TimedSpeech(audio=base64.b64encode(encode.encode(done.pcm, run.link.sample_rate, fmt)).decode("ascii"),
                            format=fmt, media_type=encode.MEDIA_TYPES[fmt], sample_rate=run.link.sample_rate,
                            frames=int(len(done.pcm)), timestamps=mode,
                            sentences=[sentence_time(t, mode) for t in done.sentences])
    return JSONResponse(body.model_dump(), headers=headers)


@router.get("/v1/models")
async def models(request: Request) -> dict[str, object]:
    info = link_info(server_state(request))
    return {"object": "list", "data": [{"id": wire.MODEL_ID, "object": "model", "created": 0,
                                        "owned_by": "omnistudio", "omnistudio": info}]}


def _piece(event: object, fmt: str, stream: encode.StreamEncoder | None, sample_rate: int,
           mode: wire.Timestamps | None = None) -> bytes | wire.SseSentence:
    """What one take event adds to the response body: a streamed piece, or the whole file at the end; or,
    with ``mode`` (timestamps: SSE only), a sentence's timing once it is rendered."""
    if isinstance(event, SentenceEnd):
        if event.timing is None or mode is None:
            return b""
        return wire.SseSentence(**sentence_time(event.timing, mode).model_dump())
    if stream is not None:
        if isinstance(event, Audio) and len(event.pcm):
            return stream.audio(event.pcm)
        return stream.end() if isinstance(event, Done) else b""
    return encode.encode(event.pcm, sample_rate, fmt) if isinstance(event, Done) else b""


async def _sse(chunks: AsyncGenerator[Any, None]) -> AsyncGenerator[bytes, None]:
    started = time.perf_counter()
    try:
        async for chunk in chunks:
            yield encode.sse_delta(chunk) if isinstance(chunk, bytes) else f"data: {chunk.model_dump_json()}\n\n".encode()
        yield encode.sse("speech.audio.done", usage={"wall_s": round(time.perf_counter() - started, 4)})
    finally:
        await chunks.aclose()
