"""``add_voice``: a new voice from a recording, by the voices core's
:func:`omnistudio.voices.manage.add_voice` (the one ``omnistudio voices add`` and
``POST /v1/audio/voices`` use: the same checks, the same roster lock, recordings stored by content hash)."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any

import anyio
from mcp.server.fastmcp import FastMCP
from pydantic import BaseModel, Field

from omnistudio.errors import UserError
from omnistudio.mcp.backend import Backend
from omnistudio.mcp.folder import OutputFolder
from omnistudio.voices.manage import add_voice as add

MAX_UPLOAD_BYTES = 20 * 2**20  # a reference recording is 3-10 s; 20 MB is minutes of WAV


class AddedVoiceAnswer(BaseModel):
    """The voice as stored: ``id`` is the voice speak and render_script take from now on."""

    id: str
    name: str
    lang: str | None
    transcript: str | None = Field(description="the transcript stored with the recording")
    transcript_source: str | None = Field(description="'given', or 'asr' when speech recognition heard it")
    created: bool = Field(description="False: an existing custom voice gained a language or was replaced")
    consent: str | None
    recording_sha256: str | None


def add_voice(backend: Backend, folder: OutputFolder, name: str, language: str, gender: str | None,
              recording: str | None, recording_base64: str | None, transcript: str | None, consent: str | None,
              replace: bool) -> AddedVoiceAnswer:
    if (recording is None) == (recording_base64 is None):
        raise UserError("give the recording: either its name in the output folder (recording) or its bytes "
                        "(recording_base64), not both")
    source: Any
    if recording is not None:
        source, label = folder.existing(recording), None
    else:
        try:
            source = base64.b64decode(recording_base64 or "", validate=True)
        except (binascii.Error, ValueError):
            raise UserError("recording_base64 is not valid base64") from None
        if len(source) > MAX_UPLOAD_BYTES:
            raise UserError(f"the recording is {len(source)} bytes; the limit is {MAX_UPLOAD_BYTES}")
        label = "the uploaded recording"
    transcriber = None
    if transcript is None:  # the speech model hears it (one line when there is none)
        # lazy: start-up (numpy)
        from omnistudio.voices.asr import Transcriber, find_model_dir

        transcriber = Transcriber(find_model_dir(backend.asr_model))
    added = add(name, language, source, transcript=transcript, transcriber=transcriber, gender=gender,
                consent=consent, replace=replace, label=label)
    if not added.created:
        backend.forget(added.id)  # a replaced recording: the engine's prompt of the old one is stale
    return AddedVoiceAnswer(id=added.id, name=added.name, lang=added.lang, transcript=added.transcript,
                            transcript_source=added.transcript_source, created=added.created,
                            consent=added.consent, recording_sha256=added.recording_sha256)


def add_voice_tool(server: FastMCP[Any], backend: Backend, folder: OutputFolder) -> None:
    @server.tool(name="add_voice", description="Add a voice (an anchor) from a reference recording of 3-10 s, usable at once by "
                             "speak and render_script as its id. The recording is a file in the output folder "
                             "or its bytes in base64; without a transcript speech recognition hears it. A new "
                             "voice needs a gender (its voice in the other language is designed from it). The "
                             "consent statement is stored with the voice. A built-in anchor is never changed.")
    async def add_voice_(name: Annotated[str, Field(description="display name; the id is made from it "
                                                    "('Ana Paz' -> ana_paz)")],
                         language: Annotated[str, Field(description="language of the recording: en or es")],
                         gender: Annotated[str | None, Field(description="male or female (a new voice needs it)")]
                         = None,
                         recording: Annotated[str | None, Field(description="the recording's name in the output "
                                                                "folder (.wav or .flac)")] = None,
                         recording_base64: Annotated[str | None, Field(description="or the recording's bytes, "
                                                                       "base64")] = None,
                         transcript: Annotated[str | None, Field(description="its exact words (none: heard "
                                                                 "by speech recognition)")] = None,
                         consent: Annotated[str | None, Field(description="the speaker's consent statement, "
                                                              "stored with the voice")] = None,
                         replace: Annotated[bool, Field(description="replace a custom voice of that name")] = False
                         ) -> AddedVoiceAnswer:
        answer: AddedVoiceAnswer = await anyio.to_thread.run_sync(
            lambda: add_voice(backend, folder, name, language, gender, recording, recording_base64, transcript,
                              consent, replace))
        return answer
