"""ElevenLabs' text-to-speech routes, so an agent built on Pipecat or LiveKit Agents changes a base URL
(docs/server.md, "Agent frameworks"): the stream-input WebSockets (:mod:`omnistudio.server.xi_session`)
and ``POST /v1/text-to-speech/{voice_id}[/stream]`` (the audio bytes, streamed as each sentence renders).
The voice id is an anchor (``ruby``, ``ruby:es``, a blend) or a custom voice's name."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, WebSocket
from fastapi.responses import StreamingResponse

from omnistudio.protocol.elevenlabs import XI_ROUTE, XiSpeechRequest, XiTimedAlignment, XiTimedChunk, parse_xi_format
from omnistudio.server import jobs
from omnistudio.server.app import (current_link, events_after, finish, first_events, read_json, server_state,
                                   start_take, streamed)
from omnistudio.server.serving import Audio, Done, SentenceStart
from omnistudio.server.xi_audio import XiEncoder, timed_alignment
from omnistudio.server.xi_session import serve_xi

router = APIRouter()


@router.websocket(XI_ROUTE + "/{voice_id}/multi-stream-input")
async def multi_stream_input(ws: WebSocket, voice_id: str) -> None:
    state = server_state(ws)
    await serve_xi(ws, state, voice_id, lambda: current_link(state), lambda run: finish(state, run), multi=True)


@router.websocket(XI_ROUTE + "/{voice_id}/stream-input")
async def stream_input(ws: WebSocket, voice_id: str) -> None:
    state = server_state(ws)
    await serve_xi(ws, state, voice_id, lambda: current_link(state), lambda run: finish(state, run), multi=False)


async def _take(request: Request, voice_id: str, output_format: str | None) -> tuple[Any, AsyncIterator[Any], XiEncoder]:
    """The request's take started (the format and the body checked first), its response's guard, its events
    from the start, and its encoder."""
    state = server_state(request)
    fmt = parse_xi_format(output_format)
    req = await read_json(request, XiSpeechRequest)
    run = await start_take(state, request, jobs.xi_job(voice_id, req))
    seen, events = await first_events(state, request, run, (Audio, Done))
    return lambda body: streamed(state, run, body), events_after(seen, events), XiEncoder(fmt, run.link.sample_rate)


@router.post(XI_ROUTE + "/{voice_id}")
@router.post(XI_ROUTE + "/{voice_id}/stream")
async def speech(request: Request, voice_id: str, output_format: str | None = None) -> StreamingResponse:
    """The text's take in ``output_format``, streamed as each sentence renders (both paths stream)."""
    guard, events, encoder = await _take(request, voice_id, output_format)

    async def body() -> AsyncIterator[bytes]:
        async for event in events:
            if isinstance(event, Audio):
                yield encoder.audio(event.pcm)
        yield encoder.end()

    return StreamingResponse(guard(body()), media_type=encoder.fmt.media_type)


@router.post(XI_ROUTE + "/{voice_id}/stream/with-timestamps")
async def timed_speech(request: Request, voice_id: str, output_format: str | None = None) -> StreamingResponse:
    """The take as newline-delimited JSON: each sentence's audio in base64 with its characters' times in
    seconds from the take's start (spread over the sentence, as on the WebSocket)."""
    guard, events, encoder = await _take(request, voice_id, output_format)
    rate = encoder.rate

    def line(audio: bytes, spoken: XiTimedAlignment | None = None) -> bytes:
        chunk = XiTimedChunk(audio_base64=base64.b64encode(audio).decode("ascii"), alignment=spoken,
                             normalized_alignment=spoken)
        return chunk.model_dump_json(exclude_none=True).encode() + b"\n"

    async def body() -> AsyncIterator[bytes]:
        text, offset = "", 0.0
        async for event in events:
            if isinstance(event, SentenceStart):
                text = event.sentence.text
            elif isinstance(event, Audio) and len(event.pcm):
                seconds = len(event.pcm) / rate
                yield line(encoder.audio(event.pcm), timed_alignment(text, seconds, offset) if event.index >= 0 else None)
                offset += seconds
        if tail := encoder.end():
            yield line(tail)

    return StreamingResponse(guard(body()), media_type="application/json")
