"""The text front-end over HTTP: ``POST /v1/text/normalize`` (what a text will be spoken as) and
``GET``/``PUT /v1/lexicon`` (the server's global pronunciation lexicon, read at each request).
Key-protected like every route (the Guard middleware)."""

from __future__ import annotations

import asyncio
from dataclasses import asdict

from fastapi import APIRouter, Request

from omnistudio.protocol import LexiconBody, LexiconEntryBody, NormalizeRequest
from omnistudio.server.app import read_json
from omnistudio.text.answer import normalize_answer
from omnistudio.text.lexicon import Entry, Lexicon
from omnistudio.text.lexicon_files import edit_lexicon, effective_lexicon, global_lexicon_path, load_lexicon

router = APIRouter()


@router.post("/v1/text/normalize")
async def normalize(request: Request) -> dict[str, object]:
    body: NormalizeRequest = await read_json(request, NormalizeRequest)  # one JSON reader: OpenAI's error shape
    lexicon = await asyncio.to_thread(effective_lexicon, None)
    return normalize_answer(body.text, body.language, lexicon).model_dump()


def _listing(lexicon: Lexicon) -> dict[str, object]:
    return LexiconBody(entries=[LexiconEntryBody(**asdict(entry)) for entry in lexicon.entries]).model_dump()


@router.get("/v1/lexicon")
async def get_lexicon() -> dict[str, object]:
    return _listing(await asyncio.to_thread(load_lexicon, global_lexicon_path()))


@router.put("/v1/lexicon")
async def put_lexicon(request: Request) -> dict[str, object]:
    """Replace the global lexicon (checked whole first: one bad entry changes nothing), atomically."""

    body: LexiconBody = await read_json(request, LexiconBody)
    lexicon = Lexicon(tuple(Entry(**entry.model_dump()) for entry in body.entries))
    return _listing(await asyncio.to_thread(edit_lexicon, global_lexicon_path(), lambda _old: lexicon))
