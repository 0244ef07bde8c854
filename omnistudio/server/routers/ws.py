"""``WS /ws/tts/stream-omni``: the streaming session (:mod:`omnistudio.server.websocket`)."""

from __future__ import annotations

from fastapi import APIRouter, WebSocket

from omnistudio.protocol import WS_ROUTE
from omnistudio.server.app import current_link, finish, server_state
from omnistudio.server.websocket import serve_session

router = APIRouter()


@router.websocket(WS_ROUTE)
async def stream_omni(ws: WebSocket) -> None:
    state = server_state(ws)
    await serve_session(ws, state, lambda: current_link(state), lambda run: finish(state, run))
