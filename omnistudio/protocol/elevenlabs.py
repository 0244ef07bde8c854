"""ElevenLabs' text-to-speech shapes, as voice-agent frameworks send them (docs/server.md, "Agent frameworks").

The WebSocket ``/v1/text-to-speech/{voice_id}/multi-stream-input`` (several contexts on one socket, each a
take, named by ``context_id``; Pipecat's and LiveKit's ElevenLabs clients use it) and ``/stream-input``
(one context, no id): the client sends :class:`XiMessage` objects (a context opens with ``{"text": " "}``,
text follows, ``flush`` speaks what is buffered, ``close_context`` ends a context, ``close_socket`` the
socket; on ``stream-input`` an empty text ends the input). The server answers :class:`XiAudio` (base64
audio and each character's time), :class:`XiFinal` once a context's audio is all sent, or :class:`XiError`.
``POST /v1/text-to-speech/{voice_id}[/stream]`` takes :class:`XiSpeechRequest` and answers the audio bytes;
``.../stream/with-timestamps`` answers a :class:`XiTimedChunk` a line (base64 audio and character times).
``output_format`` (a query parameter everywhere) is one of :data:`XI_FORMATS`' patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnistudio.protocol.base import ProtocolError, first_problem, loads_object

XI_ROUTE = "/v1/text-to-speech"
XI_RATES = (8000, 16000, 22050, 24000, 32000, 44100, 48000)
XI_FORMATS = "pcm_{8000|16000|22050|24000|32000|44100|48000} or mp3_{22050|24000|44100}_{32..192}"
_FORMAT_RE = re.compile(r"^(pcm|mp3)_(\d+)(?:_(\d+))?$")


class XiVoiceSettings(BaseModel):
    """``voice_settings``: ``speed`` is the take's speed; the others are ElevenLabs' model's and are read
    and let be (OmniVoice has no such knobs)."""

    model_config = ConfigDict(extra="allow")

    speed: float | None = None
    stability: float | None = None
    similarity_boost: float | None = None
    style: float | None = None
    use_speaker_boost: bool | None = None


class XiMessage(BaseModel):
    """One client message on the stream-input sockets (every key optional; an unknown key is refused)."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    context_id: str | None = Field(default=None, max_length=128)
    flush: bool = False
    close_context: bool = False
    close_socket: bool = False
    try_trigger_generation: bool | None = None
    voice_settings: XiVoiceSettings | None = None
    generation_config: dict[str, Any] | None = None
    pronunciation_dictionary_locators: list[Any] | None = None
    xi_api_key: str | None = None
    authorization: str | None = None


class XiAlignment(BaseModel):
    """Each character of the audio message's text, with its start and duration in ms from the message's start."""

    chars: list[str]
    charStartTimesMs: list[int]  # noqa: N815 - ElevenLabs' own key names
    charDurationsMs: list[int]  # noqa: N815


class XiAudio(BaseModel):
    audio: str  # base64 of the audio bytes (output_format)
    isFinal: None = None  # noqa: N815 - ElevenLabs sends null on every audio message
    alignment: XiAlignment | None = None
    normalizedAlignment: XiAlignment | None = None  # noqa: N815
    contextId: str | None = None  # noqa: N815


class XiFinal(BaseModel):
    isFinal: Literal[True] = True  # noqa: N815
    contextId: str | None = None  # noqa: N815


class XiError(BaseModel):
    error: str  # a short kind: invalid_request, max_active_conversations, too_many_concurrent_requests, unavailable
    message: str
    code: int = 1008
    contextId: str | None = None  # noqa: N815


class XiTimedAlignment(BaseModel):
    """``/stream/with-timestamps``' alignment: each character's start and end in seconds from the take's start."""

    characters: list[str]
    character_start_times_seconds: list[float]
    character_end_times_seconds: list[float]


class XiTimedChunk(BaseModel):
    """One line of ``POST .../stream/with-timestamps``' answer (newline-delimited JSON)."""

    audio_base64: str
    alignment: XiTimedAlignment | None = None
    normalized_alignment: XiTimedAlignment | None = None


class XiSpeechRequest(BaseModel):
    """``POST /v1/text-to-speech/{voice_id}[/stream]``'s body (the keys ElevenLabs' own model reads only,
    such as ``previous_text``, are accepted and let be)."""

    model_config = ConfigDict(extra="ignore")

    text: str
    model_id: str | None = None
    language_code: str | None = None
    voice_settings: XiVoiceSettings | None = None
    seed: int | None = None
    apply_text_normalization: Literal["auto", "on", "off"] = "auto"


@dataclass(frozen=True)
class XiFormat:
    """An ``output_format``: ``pcm`` (16-bit little-endian mono) or ``mp3``, at ``sample_rate``."""

    codec: Literal["pcm", "mp3"]
    sample_rate: int
    kbps: int | None = None

    @property
    def media_type(self) -> str:
        return "audio/mpeg" if self.codec == "mp3" else f"audio/pcm;rate={self.sample_rate}"


def parse_xi_format(value: str | None) -> XiFormat:
    """``"pcm_24000"`` / ``"mp3_44100_128"`` (default ``mp3_44100_128``, ElevenLabs'); another is one line."""
    name = (value or "mp3_44100_128").strip().lower()
    match = _FORMAT_RE.match(name)
    refused = ProtocolError(f"output_format '{value}' is not supported: use {XI_FORMATS}")
    if match is None:
        raise refused
    codec, rate, kbps = match.group(1), int(match.group(2)), match.group(3)
    if codec == "pcm" and (kbps is not None or rate not in XI_RATES):
        raise refused
    if codec == "mp3" and (rate not in (22050, 24000, 44100) or kbps is None or not 32 <= int(kbps) <= 192):
        raise refused
    return XiFormat("pcm" if codec == "pcm" else "mp3", rate, int(kbps) if kbps else None)


def parse_xi_message(raw: str | bytes) -> XiMessage:
    """A stream-input message, or one :class:`ProtocolError` line naming what is wrong with it."""
    data = loads_object(raw, "the message")
    try:
        return XiMessage.model_validate(data)
    except ValidationError as exc:
        raise ProtocolError(f"the message's {first_problem(exc, 'message')}") from None
