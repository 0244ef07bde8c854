"""``GET /v1/audio/voices``: the voices the engine can speak with."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request

from omnistudio.server.app import current_link, server_state

router = APIRouter()


@router.get("/v1/audio/voices")
async def voices(request: Request) -> dict[str, Any]:
    from omnistudio.server.listing import voice_listing

    return voice_listing(await asyncio.to_thread(current_link(server_state(request)).voices)).model_dump()
