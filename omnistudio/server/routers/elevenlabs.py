"""ElevenLabs' text-to-speech routes, so an agent built on Pipecat or LiveKit Agents changes a base URL
(docs/server.md, "Agent frameworks"): the stream-input WebSockets (:mod:`omnistudio.server.xi_session`)
and ``POST /v1/text-to-speech/{voice_id}[/stream]`` (the audio bytes, streamed as each sentence renders).
The voice id is an anchor (``ruby``, ``ruby:es``, a blend) or a custom voice's name."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request, WebSocket
from fastapi.responses import StreamingResponse

from omnistudio.protocol.elevenlabs import XI_ROUTE, XiSpeechRequest, parse_xi_format
from omnistudio.server import jobs
from omnistudio.server.app import (current_link, events_after, finish, first_events, read_json, server_state,
                                   start_take, streamed)
from omnistudio.server.serving import Audio, Done
from omnistudio.server.xi_audio import XiEncoder
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


@router.post(XI_ROUTE + "/{voice_id}")
@router.post(XI_ROUTE + "/{voice_id}/stream")
async def speech(request: Request, voice_id: str, output_format: str | None = None) -> StreamingResponse:
    """The text's take in ``output_format``, streamed as each sentence renders (both paths stream)."""
    state = server_state(request)
    fmt = parse_xi_format(output_format)
    req = await read_json(request, XiSpeechRequest)
    run = await start_take(state, request, jobs.xi_job(voice_id, req))
    seen, events = await first_events(state, request, run, (Audio, Done))
    encoder = XiEncoder(fmt, run.link.sample_rate)

    async def body() -> AsyncIterator[bytes]:
        async for event in events_after(seen, events):
            if isinstance(event, Audio):
                yield encoder.audio(event.pcm)
        yield encoder.end()

    return StreamingResponse(streamed(state, run, body()), media_type=fmt.media_type)
