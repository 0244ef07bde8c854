"""``/v1/audio/voice_consents``: consent recordings, as OpenAI's client sends them (``create``: multipart
``recording``, ``language``, ``name``; ``retrieve``, ``update`` (a new name), ``list``, ``delete``). A voice
made from a recording names one by its id (``consent``): :mod:`omnistudio.voices.consents`."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from omnistudio import protocol as wire
from omnistudio.errors import UserError
from omnistudio.server.voice_admin import read_form, refusal
from omnistudio.voices import consents

ROUTE = wire.CONSENTS_ROUTE
router = APIRouter()


class Rename(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str


def body(consent: consents.Consent) -> wire.VoiceConsentBody:
    return wire.VoiceConsentBody(id=consent.id, name=consent.name, language=consent.language,
                                 created_at=consent.created_at)


@router.post(ROUTE)
async def create(request: Request) -> JSONResponse:
    fields, _field, recording = await read_form(request, ("recording",), "send the consent as multipart/form-data "
                                                "(fields name and language; the recording as recording)")
    if unknown := sorted(set(fields) - {"name", "language"}):
        raise UserError(f"{unknown[0]}: not a field of a consent recording (name, language, recording)")
    if recording is None:
        raise UserError("the consent needs its recording as the form's 'recording'")
    try:
        made = await asyncio.to_thread(consents.add_consent, fields.get("name"), fields.get("language"), recording)
    except UserError as exc:
        raise refusal(exc) from None
    return JSONResponse(body(made).model_dump(), status_code=201)


@router.get(ROUTE)
async def listing(after: str | None = None, limit: int = 20) -> dict[str, object]:
    if not 1 <= limit <= 100:
        raise UserError(f"limit {limit} is outside 1..100")
    kept = await asyncio.to_thread(consents.list_consents)
    ids = [c.id for c in kept]
    start = ids.index(after) + 1 if after in ids else 0
    page = kept[start:start + limit]
    return wire.VoiceConsentList(data=[body(c) for c in page], first_id=page[0].id if page else None,
                                 last_id=page[-1].id if page else None,
                                 has_more=start + limit < len(kept)).model_dump()


@router.get(ROUTE + "/{consent_id}")
async def retrieve(consent_id: str) -> dict[str, object]:
    try:
        return body(await asyncio.to_thread(consents.get_consent, consent_id)).model_dump()
    except UserError as exc:
        raise refusal(exc) from None


@router.post(ROUTE + "/{consent_id}")
async def update(consent_id: str, change: Rename) -> dict[str, object]:
    try:
        return body(await asyncio.to_thread(consents.rename_consent, consent_id, change.name)).model_dump()
    except UserError as exc:
        raise refusal(exc) from None


@router.delete(ROUTE + "/{consent_id}")
async def delete(consent_id: str) -> dict[str, object]:
    try:
        gone = await asyncio.to_thread(consents.remove_consent, consent_id)
    except UserError as exc:
        raise refusal(exc) from None
    return wire.VoiceConsentDeleted(id=gone.id).model_dump()
