"""The protocol's constants, its error (:class:`ProtocolError`), OpenAI's error body and the check of a
response's shape: what every other part of the protocol builds on."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from omnistudio.checks import check_unicode
from omnistudio.errors import UserError

PROTOCOL = 1
WS_ROUTE = "/ws/tts/stream-omni"
MAX_INPUT_CHARS = 4096  # OpenAI's limit for /v1/audio/speech input
MAX_SCRIPT_CHARS = 20_000  # /tts/* and the WebSocket take whole scripts
MAX_BODY_BYTES = 1 << 20
VOICES_ROUTE = "/v1/audio/voices"
CONSENTS_ROUTE = "/v1/audio/voice_consents"  # consent recordings a voice names by id (OpenAI's shape)
MAX_UPLOAD_BYTES = 8 << 20  # POST /v1/audio/voices: the whole multipart body (a 30 s reference fits)
MAX_CUSTOM_VOICES = 64  # custom voices a server keeps (serve --max-voices)
MAX_ITEMS = 512
FORMATS = ("wav", "flac", "mp3", "opus", "pcm")
MODEL_ID = "omnivoice"
DEFAULT_VOICE = "ruby"
REPLICA_HEADER = "x-omnistudio-replica"


class ProtocolError(UserError):
    """A message that is not this protocol: an unknown type, a missing or mistyped field (one line)."""


MAX_JSON_DEPTH = 64  # no request of this protocol nests deeper


def loads_object(raw: str | bytes, who: str = "the request body") -> dict[str, object]:
    """A JSON object from a client, or one :class:`ProtocolError` line: not JSON, not an object, nested
    deeper than any request of this protocol, or holding text that cannot be UTF-8 (a lone surrogate)."""

    try:
        data = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError):
        raise ProtocolError(f"{who} is not valid JSON") from None
    except RecursionError:
        raise ProtocolError(f"{who} nests deeper than {MAX_JSON_DEPTH} levels") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"{who} must be a JSON object")
    pending: list[tuple[Any, int]] = [(data, 1)]
    while pending:  # a loop, not recursion: the depth is what is being checked
        value, depth = pending.pop()
        if depth > MAX_JSON_DEPTH:
            raise ProtocolError(f"{who} nests deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(value, dict):
            for key, item in value.items():
                check_unicode(key, f"{who}'s key")
                pending.append((item, depth + 1))
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            try:
                check_unicode(value, f"a text in {who}")
            except UserError as exc:
                raise ProtocolError(str(exc)) from None
    return data


# ------------------------------------------------------------------ errors
def error_kind(status: int) -> str:
    """OpenAI's error type for an HTTP status."""
    return "invalid_request_error" if status < 500 else "server_error"


def error_body(message: str, kind: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> dict[str, object]:
    """OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}`` (the one builder: the
    routes, the guard in front of them and Ray Serve's proxy middleware all answer with it)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_json(status: int, message: str, kind: str | None = None) -> bytes:
    """:func:`error_body` as the bytes of a response sent without a framework (an ASGI middleware)."""
    return json.dumps(error_body(message, kind or error_kind(status), code=str(status))).encode()


def error_message(body: bytes | str) -> str:
    """The message of an error body (OpenAI's ``{"error": {"message"}}``, FastAPI's ``{"detail"}`` or
    plain text), as the server wrote it; "" when it says nothing."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()
    if not isinstance(data, dict):
        return ""
    said = data.get("error", data.get("detail", data))
    if isinstance(said, dict):
        said = said.get("message") or said.get("detail") or ""
    return str(said).strip()


Body = TypeVar("Body", bound=BaseModel)


def first_problem(exc: Any, whole: str = "body", skip: int = 0, omit: tuple[object, ...] = ()) -> str:
    """A pydantic validation error's first problem as ``where: what`` (``where``: its location, less the first
    ``skip`` parts and any in ``omit``; ``whole`` when nothing is left)."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in tuple(first.get("loc", ()))[skip:] if part not in omit) or whole
    return f"{where}: {first.get('msg', 'invalid')}"


def parse_response(model: type[Body], data: Any, route: str) -> Body:
    """A JSON response body as ``model``; a body that is not that shape is a ProtocolError naming the route."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ProtocolError(f"{route} answered a body this client cannot read ({first_problem(exc)})") from None
