"""Requests: the speech routes' bodies (OpenAI's shape plus OmniStudio's take fields), the text
front-end's and the lexicon's, and the WebSocket client's messages (``speak``, ``prepare``, ``cancel``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from omnistudio.checks import DEFAULT_NUM_STEP, MAX_LEXICON_ENTRIES
from omnistudio.protocol.base import DEFAULT_VOICE, MAX_ITEMS, MODEL_ID

MAX_TEXT_FRAME = 16 << 10  # characters of one streamed ``text`` message

# ---------------------------------------------------------------- requests
Timestamps = Literal["word", "sentence"]


class TakeFields(BaseModel):
    """The synthesis options every speech request carries (checked by the server's job planning)."""

    model_config = ConfigDict(extra="ignore")

    language: str | None = None
    num_step: int | str = DEFAULT_NUM_STEP
    seed: int | str = 0
    guidance_scale: float = 2.0
    speed: float | None = None
    target_lufs: float | None = None
    profile: str | None = None  # a loudness rule (ebu, atsc, podcast, streaming): its target and true-peak ceiling
    normalize: bool = True  # false: the text goes to the model as written (no text front-end, no lexicon)
    # "sentence": each sentence's span in the take; "word": and its written words' times (Whisper where it
    # hears the language, else estimated); None: neither (no alignment cost)
    timestamps: Timestamps | None = None


class SpeechRequest(TakeFields):
    """``POST /v1/audio/speech`` (OpenAI), plus OmniStudio's extra fields."""

    model: str = MODEL_ID
    input: str = ""
    voice: str = DEFAULT_VOICE
    response_format: str = "mp3"
    instructions: str | None = None  # voice-design attributes, with voice "design" only (else a 400)
    stream_format: str = "audio"


class GenerateRequest(TakeFields):
    """``POST /tts/generate`` (a WAV with loudness headers) and ``/tts/generate-shm`` (a file in /dev/shm)."""

    text: str = ""
    voice: str = DEFAULT_VOICE
    name: str | None = None  # generate-shm: the /dev/shm file name


class NormalizeRequest(BaseModel):
    """``POST /v1/text/normalize``: what the server's text front-end (with its lexicon) says for ``text``."""

    model_config = ConfigDict(extra="ignore")

    text: str
    language: str = "en"


class SpokenSpan(BaseModel):
    """``written[written_start:written_end]`` is said as ``spoken[spoken_start:spoken_end]``, by ``rule``."""

    written_start: int
    written_end: int
    spoken_start: int
    spoken_end: int
    rule: str
    detail: str = ""


class TextWarningBody(BaseModel):
    written_start: int
    written_end: int
    message: str


class NormalizeResponse(BaseModel):
    written: str
    spoken: str
    language: str
    spans: list[SpokenSpan] = Field(default_factory=list)
    warnings: list[TextWarningBody] = Field(default_factory=list)


class LexiconEntryBody(BaseModel):
    """One pronunciation: ``word`` is said as ``say`` (``lang`` None: both languages)."""

    model_config = ConfigDict(extra="forbid")

    word: str
    say: str
    lang: str | None = None
    case_sensitive: bool = False
    phones: bool = False


class LexiconBody(BaseModel):
    """``GET``/``PUT /v1/lexicon``: the server's global lexicon, every entry."""

    model_config = ConfigDict(extra="forbid")

    entries: list[LexiconEntryBody] = Field(default_factory=list, max_length=MAX_LEXICON_ENTRIES)


class WsItem(BaseModel):
    """One pre-planned sentence of a ``speak`` message (a remote take's group). ``text`` is what the
    model says: the client's take pipeline ran the text front-end (normalisation, its lexicon)."""

    model_config = ConfigDict(extra="ignore")

    text: str
    voice: str
    lang: str
    seed: int
    pause_s: float = 0.0


class WsRequest(TakeFields):
    """``speak``: the message that opens a take on the WebSocket (a script, a text, or planned items)."""

    type: Literal["speak"] = "speak"
    text: str | None = None
    script: str | None = None
    voice: str = DEFAULT_VOICE
    pcm: Literal["s16", "f32"] = "s16"
    items: list[WsItem] | None = Field(default=None, max_length=MAX_ITEMS)
    input: Literal["whole", "stream"] = "whole"  # stream: the text comes after, in ``text`` messages


class WsText(BaseModel):
    """``text``: more of a streamed input's text (``speak`` with ``input: "stream"``), any size from a
    character; a sentence is spoken once text follows it."""

    type: Literal["text"]
    text: str = Field(max_length=MAX_TEXT_FRAME)


class WsFlush(BaseModel):
    """``flush``: what a streamed input has written so far is complete (its last sentence is spoken now)."""

    type: Literal["flush"]


class WsEnd(BaseModel):
    """``end``: a streamed input's text has ended; the take finishes after its last sentence."""

    type: Literal["end"]


class WsPrepareVoice(BaseModel):
    """One voice of a ``prepare`` message (its language: the voice's own, else English)."""

    model_config = ConfigDict(extra="ignore")

    voice: str
    lang: str | None = None


class WsPrepare(BaseModel):
    """``prepare``: a remote studio's prepare phase (every voice resolved on the engine worker; no take,
    no queue slot)."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["prepare"]
    voices: list[WsPrepareVoice] = Field(min_length=1, max_length=MAX_ITEMS)


class WsCancel(BaseModel):
    """``cancel``: stop the session's work (the server stops within one diffusion step)."""

    type: Literal["cancel"]


ClientMessage = Annotated[WsRequest | WsPrepare | WsCancel | WsText | WsFlush | WsEnd, Field(discriminator="type")]
