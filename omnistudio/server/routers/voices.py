"""``/v1/audio/voices``: the voices the engine can speak with (``GET``), a new one (``POST``, multipart),
one voice's details (``GET /{id}``) and its removal (``DELETE /{id}``): :mod:`omnistudio.server.voice_admin`."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from omnistudio.protocol import VOICES_ROUTE
from omnistudio.server import voice_admin
from omnistudio.server.app import current_link, server_state
from omnistudio.server.listing import voice_listing

router = APIRouter()


@router.get(VOICES_ROUTE)
async def voices(request: Request) -> dict[str, object]:
    return voice_listing(await asyncio.to_thread(current_link(server_state(request)).voices)).model_dump()


@router.post(VOICES_ROUTE)
async def add_voice(request: Request) -> JSONResponse:
    added = await voice_admin.add(server_state(request), request)
    return JSONResponse(added.model_dump(), status_code=201)


@router.get(VOICES_ROUTE + "/{voice_id}")
async def voice(request: Request, voice_id: str) -> dict[str, object]:
    return (await voice_admin.detail_of(server_state(request), voice_id)).model_dump()


@router.delete(VOICES_ROUTE + "/{voice_id}")
async def delete_voice(request: Request, voice_id: str) -> dict[str, object]:
    return (await voice_admin.delete(server_state(request), voice_id)).model_dump()
