"""The WebSocket's server events (discriminated on ``type``), and the parsing of either side's messages."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from omnistudio.protocol.base import PROTOCOL, ProtocolError, first_problem, loads_object
from omnistudio.protocol.requests import ClientMessage
from omnistudio.protocol.timestamps import SentenceTime

# ------------------------------------------------------------------ events
class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore")


class WsStart(_Event):
    type: Literal["start"] = "start"
    sample_rate: int
    channels: int = 1
    pcm: Literal["s16", "f32"]
    sentences: int


class WsSentenceStart(_Event):
    """A sentence begins: ``text`` as written (shown, captioned), ``spoken`` as the model says it."""

    type: Literal["sentence_start"] = "sentence_start"
    index: int
    text: str
    spoken: str = ""
    voice: str = ""
    lang: str = ""


class WsSentenceEnd(_Event):
    """The end of a sentence's PCM: its frame count, diffusion steps, timings and loudness; with
    ``timestamps`` asked for, its span in the take and its words (``timing``)."""

    type: Literal["sentence_end"] = "sentence_end"
    index: int
    frames: int
    steps: int = 0
    timings: dict[str, Any] = Field(default_factory=dict)
    loudness: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None  # the sentence was skipped (its PCM is empty)
    timing: SentenceTime | None = None


class WsDone(_Event):
    """The take is complete; the summary (integrated loudness, true peak, TTFA, RTF) as extra fields."""

    model_config = ConfigDict(extra="allow")
    type: Literal["done"] = "done"


class WsError(_Event):
    """The request failed; ``status`` is the HTTP status it means (429 carries ``retry_after``)."""

    type: Literal["error"] = "error"
    message: str
    status: int = 400
    retry_after: float | None = None


class WsCancelled(_Event):
    type: Literal["cancelled"] = "cancelled"


class WsPrepareStep(_Event):
    """One step of a ``prepare``: ``done`` of ``total`` voices, and what was done for this one."""

    type: Literal["prepare"] = "prepare"
    done: int
    total: int
    voice: str
    lang: str
    action: str


class WsPrepared(_Event):
    type: Literal["prepared"] = "prepared"


ServerEvent = Annotated[WsStart | WsSentenceStart | WsSentenceEnd | WsDone | WsError | WsCancelled | WsPrepareStep
                        | WsPrepared, Field(discriminator="type")]

_CLIENT = TypeAdapter(ClientMessage)
_SERVER = TypeAdapter(ServerEvent)
_CLIENT_TYPES = ("speak", "prepare", "cancel", "text", "flush", "end")
_SERVER_TYPES = ("start", "sentence_start", "sentence_end", "done", "error", "cancelled", "prepare", "prepared")


def _parse(raw: str | bytes | dict[str, Any], adapter: TypeAdapter[Any], types: tuple[str, ...], who: str,
           default: str | None = None) -> Any:
    message: Any = raw if isinstance(raw, dict) else loads_object(raw, f"{who} message")
    if not isinstance(message, dict):
        raise ProtocolError(f"{who} message is not a JSON object")
    kind = message.get("type", default)
    if kind not in types:
        raise ProtocolError(f"unknown {who} message type {kind!r} (protocol {PROTOCOL} has {', '.join(types)}): "
                            "the client and the server must run the same OmniStudio version")
    try:
        return adapter.validate_python({**message, "type": kind})
    except ValidationError as exc:
        raise ProtocolError(f"{kind} message: {first_problem(exc, 'message', skip=1)}") from None


def parse_client_message(raw: str | bytes | dict[str, Any]) -> ClientMessage:
    """A client's WebSocket message (a message without ``type`` is a ``speak``)."""
    message: ClientMessage = _parse(raw, _CLIENT, _CLIENT_TYPES, "client", default="speak")
    return message


def parse_server_event(raw: str | bytes | dict[str, Any]) -> ServerEvent:
    """A server's WebSocket event."""
    event: ServerEvent = _parse(raw, _SERVER, _SERVER_TYPES, "server")
    return event


def frame(message: BaseModel) -> str:
    """A message as the text frame that carries it."""
    return message.model_dump_json()
