"""Voice management over HTTP: ``POST /v1/audio/voices`` (multipart), ``GET``/``DELETE /v1/audio/voices/{id}``,
and the design voice of a speech request (``"voice": "design"`` with ``instructions``).

The checks and the storage are :mod:`omnistudio.voices.manage`'s and :mod:`omnistudio.voices.design`'s (the
CLI's ``voices add`` and the MCP tools call the same functions); this module reads the request (the body
counted as it arrives: :data:`~omnistudio.protocol.MAX_UPLOAD_BYTES`, 413 beyond), maps refusals to
statuses (409 a name taken or the roster full, 403 a built-in anchor, 404 unknown), and on the engine
thread makes the new voice usable at once: the engine forgets what it kept of a replaced or removed voice
(prompts, blends; the server's take cache is cleared) and builds the new prompt before the answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import time
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from fastapi import Request
from pydantic import ValidationError
from starlette.formparsers import FormParser, MultiPartException, MultiPartParser
from starlette.requests import ClientDisconnect

from omnistudio import protocol as wire
from omnistudio.checks import check_language, check_seed
from omnistudio.errors import UserError
from omnistudio.server.app import CLIENT_CLOSED, HTTPError, ServerState, current_link, validation_line
from omnistudio.voices import consents, manage
from omnistudio.voices.design import DESIGN_VOICE, add_design_voice, design_prompt, parse_instructions
from omnistudio.voices.resolve import VoiceRef

if TYPE_CHECKING:
    from omnistudio.engine.engine import Engine
    from omnistudio.voices.asr import Transcriber

T = TypeVar("T")

STATUS = {manage.VoiceExists: 409, manage.VoiceLimit: 409, manage.BuiltInVoice: 403, manage.UnknownVoice: 404,
          consents.UnknownConsent: 404}
MAX_FIELD_BYTES = 16 << 10  # a form field other than the recording

_ASR_LOCK = threading.Lock()
_ASR: list[Transcriber | None] = []  # [] until a voice arrives without a transcript: then [the transcriber] or [None]


def refusal(exc: UserError) -> HTTPError:
    """A core refusal as the HTTP error it means (400 when it names no status of its own)."""
    return HTTPError(next((code for kind, code in STATUS.items() if isinstance(exc, kind)), 400), str(exc))


def engine_of(state: ServerState) -> Engine:
    """The engine this server opened (voices are designed on it), or a 501 where it is not in this process."""
    current_link(state)  # 503 while loading
    if state.engine is None:
        raise HTTPError(501, "this server's engine runs elsewhere: it cannot build voice prompts")
    return state.engine


async def on_engine(state: ServerState, fn: Callable[[Engine], T]) -> T:
    """``fn(engine)`` on the engine thread (between diffusion passes), awaited."""
    link, engine = current_link(state), engine_of(state)
    return await asyncio.to_thread(link.call, lambda: fn(engine))


# -------------------------------------------------------------------- reading
Form = tuple[dict[str, str], str | None, bytes | None]  # fields, the file field's name, its bytes


async def read_upload(request: Request) -> tuple[wire.VoiceUpload, bytes | None, str | None]:
    """The voice form's fields, its recording (``file``, or OpenAI's ``audio_sample``) and which field
    held it, the body counted as it arrives."""
    fields, field, recording = await read_form(request, ("file", "audio_sample"),
                                               "send the voice as multipart/form-data (fields name, language, gender, "
                                               "consent, transcript; the recording as file)")
    try:
        return wire.VoiceUpload.model_validate(fields), recording, field
    except ValidationError as exc:  # one line naming the field
        raise HTTPError(400, validation_line(exc)) from None


async def read_form(request: Request, file_fields: tuple[str, ...], how: str) -> Form:
    """A form's fields and its one file (in one of ``file_fields``), the body counted as it arrives; ``how``:
    the line that says how to send it when it is no form."""
    kind = request.headers.get("content-type", "").lower()
    if not kind.startswith(("multipart/form-data", "application/x-www-form-urlencoded")):
        raise HTTPError(400, how)
    parts, size = [], 0
    try:
        async for part in request.stream():
            size += len(part)
            if size > wire.MAX_UPLOAD_BYTES:
                raise HTTPError(413, f"the upload is over {wire.MAX_UPLOAD_BYTES} bytes (a reference of 3-10 s "
                                     "is enough; 30 s at most)")
            parts.append(part)
    except ClientDisconnect:
        raise HTTPError(CLIENT_CLOSED, "the client closed the connection before its upload ended") from None

    async def body() -> AsyncGenerator[bytes, None]:
        yield b"".join(parts)

    try:
        if kind.startswith("application/x-www-form-urlencoded"):  # fields alone: a design voice
            form = await FormParser(request.headers, body()).parse()
        else:
            form = await MultiPartParser(request.headers, body(), max_files=1, max_fields=16,
                                         max_part_size=MAX_FIELD_BYTES).parse()
    except MultiPartException as exc:
        raise HTTPError(400, f"the multipart body cannot be read: {exc.message}") from None
    fields: dict[str, str] = {}
    field: str | None = None
    recording: bytes | None = None
    for key, value in form.multi_items():
        if isinstance(value, str):
            if key in fields:
                raise HTTPError(400, f"the form has two '{key}' fields")
            fields[key] = value
        elif key not in file_fields:
            raise HTTPError(400, f"the form's file field is '{key}': send the recording as "
                                 f"{' or '.join(repr(f) for f in file_fields)}")
        elif field is not None:
            raise HTTPError(400, f"the form has two recordings ('{field}' and '{key}'): send one")
        else:
            field, recording = key, await value.read()
    await form.close()
    return fields, field, recording


def _transcriber() -> Transcriber | None:
    """The process's speech model for uploads without a transcript (``$OMNISTUDIO_ASR_MODEL``, else the
    packaged Whisper), loaded once on first use; None when there is none."""
    with _ASR_LOCK:
        if not _ASR:

            # lazy: looked up when called (tests replace it)
            from omnistudio.voices.asr import ASR_ENV, Transcriber, packaged_model_dir

            chosen = os.environ.get(ASR_ENV) or packaged_model_dir()
            _ASR.append(Transcriber(Path(chosen), threads=1) if chosen else None)
        return _ASR[0]


# --------------------------------------------------------------------- routes
async def add(state: ServerState, request: Request) -> wire.VoiceAdded:
    """``POST /v1/audio/voices``: store the voice, build its prompt on the engine, answer 201 with it."""
    form, recording, field = await read_upload(request)
    engine_of(state)  # 503 while loading, before anything is stored
    try:
        form = await asyncio.to_thread(openai_shape, form, recording, field)
        added = await asyncio.to_thread(_store, state, form, recording)
    except UserError as exc:
        raise refusal(exc) from None
    lang = added.lang or (form.language or "en")
    try:
        await asyncio.to_thread(_build, state, added.id, lang)
    except Exception as exc:
        if added.created:  # a voice whose prompt cannot be made is not kept
            await asyncio.to_thread(manage.remove_voice, added.id)
        if isinstance(exc, UserError):
            raise HTTPError(400, f"the voice's prompt cannot be built: {exc}") from None
        raise
    detail = await detail_of(state, added.id)
    return wire.VoiceAdded(**detail.model_dump(), created=added.created, language=added.lang,
                           transcript=added.transcript, transcript_source=added.transcript_source,
                           asr_text=added.asr_text, created_at=int(time.time()),
                           type="prompt" if form.instructions is not None else "audio_sample",
                           prompt=form.instructions)


def openai_shape(form: wire.VoiceUpload, recording: bytes | None, field: str | None) -> wire.VoiceUpload:
    """OpenAI's ``voices.create`` as today's form: ``type: prompt`` is a design voice (the prompt as its
    instructions, its seed from the prompt's text unless given); an ``audio_sample`` (or ``type:
    audio_sample``) needs a consent recording's id, whose language the voice takes unless one is given, and
    a gender heard from the recording's pitch unless one is given (by the voice store, which reads it). A consent id in today's form is checked
    the same way (the voice stores that consent). Today's form passes through unchanged."""
    if form.type == "prompt" or (form.type is None and form.prompt is not None):
        if recording is not None:
            raise UserError("a voice of type 'prompt' is described in words: send no recording")
        if form.instructions is not None:
            raise UserError("give the voice's description as prompt or as instructions, not both")
        text = (form.prompt or "").strip()
        if not text:
            raise UserError("a voice of type 'prompt' needs its description: prompt (e.g. 'female, low pitch')")
        seed = form.seed if form.seed is not None else int.from_bytes(hashlib.sha256(text.encode()).digest()[:4]) >> 1
        return form.model_copy(update={"instructions": text, "seed": seed})
    openai = form.type == "audio_sample" or field == "audio_sample"
    cons = (form.consent or "").strip()
    if not (openai or cons.startswith(consents.PREFIX)):
        return form
    if not cons:
        raise UserError("an audio_sample voice needs consent: the id of a consent recording "
                        "(POST /v1/audio/voice_consents)")
    consent = consents.get_consent(cons)
    language = form.language or consent.lang
    return form.model_copy(update={"consent": consent.statement(), "language": language,
                                   "type": "audio_sample" if openai else form.type})


def _store(state: ServerState, form: wire.VoiceUpload, recording: bytes | None) -> manage.AddedVoice:
    if form.instructions is not None:
        if recording is not None:
            raise UserError("give a recording or instructions, not both")
        if form.seed is None:
            raise UserError("a design voice needs its seed (the same seed makes the same voice every time)")
        return add_design_voice(form.name, parse_instructions(form.instructions, form.language), form.seed,
                                replace=form.replace, max_custom=state.max_voices)
    if recording is None:
        raise UserError("the voice needs its reference recording as the form's 'file' (or instructions and a seed)")
    if not form.language:
        raise UserError("the voice needs the language of its recording: language (en or es)")
    transcriber = None if form.transcript else _transcriber()
    if not form.transcript and transcriber is None:
        raise UserError("no transcript was given and this server has no speech-recognition model to hear it: "
                        "send the recording's transcript")
    with _ASR_LOCK if transcriber is not None else _NO_LOCK:
        return manage.add_voice(form.name, form.language, recording, transcript=form.transcript,
                                transcriber=transcriber, gender=form.gender, age=form.age, pitch=form.pitch,
                                style=form.style, accent=form.accent, seed=form.seed, consent=form.consent,
                                replace=form.replace, max_custom=state.max_voices,
                                hear_gender=form.type == "audio_sample")


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_exc: object) -> None:
        return None


_NO_LOCK = _NoLock()


def _build(state: ServerState, anchor_id: str, lang: str) -> None:
    """Forget the old voice (the engine's prompts and blends, the cached takes), build and keep the new prompt."""

    state.forget_voice(anchor_id)
    current_link(state).build_voice(VoiceRef(anchor=anchor_id), lang)


async def detail_of(state: ServerState, anchor_id: str) -> wire.VoiceDetail:
    """``GET /v1/audio/voices/{id}``."""
    try:
        key = manage.check_voice_id(anchor_id)
        fingerprint = engine_of(state).loaded.fingerprint if state.link is not None else None
        found = await asyncio.to_thread(manage.voice_details, key, fingerprint)
    except UserError as exc:
        raise refusal(exc) from None
    return wire.VoiceDetail.model_validate(found.as_dict())


async def delete(state: ServerState, anchor_id: str) -> wire.VoiceDeleted:
    """``DELETE /v1/audio/voices/{id}``: a custom voice, its prompts and recordings (never a built-in one)."""
    try:
        removed = await asyncio.to_thread(manage.remove_voice, anchor_id)
    except UserError as exc:
        raise refusal(exc) from None
    await asyncio.to_thread(state.forget_voice, removed.id)
    return wire.VoiceDeleted(id=removed.id, prompts_removed=removed.prompts_removed,
                             recordings_removed=removed.recordings_removed)


# ---------------------------------------------------------------- design voice
async def design_voice(state: ServerState, req: wire.SpeechRequest) -> tuple[VoiceRef, dict[str, str]] | None:
    """A speech request's design voice: None when it asks for none; else the prompt's voice reference and
    the headers that say what the model was given. ``instructions`` with any other voice is a 400 (never
    ignored): an anchor's voice is its recording or its saved design."""

    voice = (req.voice or "").strip().lower()
    given = req.instructions is not None and bool(req.instructions.strip())
    if voice != DESIGN_VOICE:
        if given:
            raise HTTPError(400, f"instructions apply to voice 'design' only: '{req.voice}' speaks with its own "
                                 "recording or saved design; leave instructions out, or use voice 'design' "
                                 "(save a design as a named voice with POST /v1/audio/voices)")
        return None
    if not given:
        raise HTTPError(400, "voice 'design' needs instructions: voice-design attributes such as "
                             "'female, middle-aged, low pitch'")
    lang = check_language(req.language or "en")
    design = parse_instructions(req.instructions, lang)
    seed = check_seed(req.seed)
    made = await on_engine(state, lambda engine: design_prompt(engine, design, seed, lang))
    headers = {"X-OmniStudio-Voice-Instruct": made.instruct, "X-OmniStudio-Voice-Seed": str(made.seed),
               "X-OmniStudio-Voice-Source": made.source_sha256}
    return VoiceRef.prompt_of(made.path), headers
