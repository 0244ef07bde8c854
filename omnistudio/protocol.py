"""The wire protocol: every request, response and WebSocket message between a client and the speech server.

One module, imported by the server (``omnistudio.server``) and by the one client package
(``omnistudio.client``): a field the server sends is a field the client reads, by the same name.

- HTTP requests: :class:`SpeechRequest` (``POST /v1/audio/speech``, OpenAI's shape plus OmniStudio's
  fields) and :class:`GenerateRequest` (``POST /tts/generate`` and ``/tts/generate-shm``).
- HTTP responses: :class:`Health` (``GET /health``), :class:`VoiceListing` (``GET /v1/audio/voices``),
  :class:`VoiceDetail` / :class:`VoiceAdded` / :class:`VoiceDeleted` (a voice, from :class:`VoiceUpload`),
  :class:`TimedSpeech` and :class:`SseSentence` (``/v1/audio/speech`` with ``timestamps``), :class:`ShmTake`
  (``/tts/generate-shm``) and OpenAI's error body (:func:`error_body`). Sentence and word times are
  :class:`SentenceTime` / :class:`WordTime` everywhere (the WebSocket's ``sentence_end`` too).
- WebSocket ``WS_ROUTE``: the client sends one :class:`WsRequest` (``speak``) or :class:`WsPrepare`, then
  optionally :class:`WsCancel`; the server answers with the events of :data:`ServerEvent`.

:data:`PROTOCOL` is the version a server reports in ``/health``; a client refuses a server that speaks
another one. A message of an unknown type, or one without the fields its type needs, is a
:class:`ProtocolError` (one line naming what was wrong), never a guess.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from omnistudio.checks import DEFAULT_NUM_STEP
from omnistudio.errors import UserError

PROTOCOL = 1
WS_ROUTE = "/ws/tts/stream-omni"
MAX_INPUT_CHARS = 4096  # OpenAI's limit for /v1/audio/speech input
MAX_SCRIPT_CHARS = 20_000  # /tts/* and the WebSocket take whole scripts
MAX_BODY_BYTES = 1 << 20
VOICES_ROUTE = "/v1/audio/voices"
MAX_UPLOAD_BYTES = 8 << 20  # POST /v1/audio/voices: the whole multipart body (a 30 s reference fits)
MAX_CUSTOM_VOICES = 64  # custom voices a server keeps (serve --max-voices)
MAX_ITEMS = 512
FORMATS = ("wav", "flac", "mp3", "opus", "pcm")
MODEL_ID = "omnivoice"
DEFAULT_VOICE = "ruby"
REPLICA_HEADER = "x-omnistudio-replica"


class ProtocolError(UserError):
    """A message that is not this protocol: an unknown type, a missing or mistyped field (one line)."""


# ------------------------------------------------------------------ errors
def error_kind(status: int) -> str:
    """OpenAI's error type for an HTTP status."""
    return "invalid_request_error" if status < 500 else "server_error"


def error_body(message: str, kind: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> dict[str, Any]:
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

    entries: list[LexiconEntryBody] = Field(default_factory=list, max_length=10_000)


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


ClientMessage = Annotated[WsRequest | WsPrepare | WsCancel, Field(discriminator="type")]


# ------------------------------------------------------------ timestamps
class WordTime(BaseModel):
    """One word of the written text, when it is heard: seconds from the start of the take, to the
    millisecond, as ``render -o OUT`` records it in its sidecar's ``sentences[*].words``."""

    model_config = ConfigDict(extra="ignore")

    text: str  # as written, with its punctuation ("3,2 %" is one word)
    start: float
    end: float
    confidence: float | None = None  # the aligner's probability; None when estimated
    estimated: bool = False  # true: spread by syllables inside the sentence's span, never measured
    written_start: int = 0  # the word's character span in the sentence's text
    written_end: int = 0


class SentenceTime(BaseModel):
    """One sentence's exact span in the take (seconds, to 0.1 ms: the sidecar's ``start_s``/``end_s``)
    and, with ``timestamps: "word"``, its words (``None`` with ``"sentence"``)."""

    model_config = ConfigDict(extra="ignore")

    index: int  # the sentence's id in its take
    text: str  # as written
    start: float
    end: float
    words: list[WordTime] | None = None


class TimedSpeech(BaseModel):
    """``POST /v1/audio/speech`` with ``timestamps`` (not SSE): the whole file in base64, and its sentences."""

    model_config = ConfigDict(extra="ignore")

    object: Literal["audio.speech.timed"] = "audio.speech.timed"
    audio: str  # base64 of the file in ``format`` (the bytes the plain request would answer)
    format: str
    media_type: str
    sample_rate: int
    frames: int
    timestamps: Timestamps
    sentences: list[SentenceTime]


class ShmTake(BaseModel):
    """``POST /tts/generate-shm``: where the samples are (float32 mono, docs/shm.md), the take's figures
    (``sentences``: how many, loudness, TTFA, RTF: extra fields) and, with ``timestamps``, each sentence's
    span and words (``sentence_times``), so a reader has the word times before it maps the PCM."""

    model_config = ConfigDict(extra="allow")

    name: str
    path: str
    frames: int
    sample_rate: int
    sentence_times: list[SentenceTime] | None = None  # only with timestamps (absent otherwise)


class SseSentence(SentenceTime):
    """The SSE event after a sentence's audio (``stream_format: "sse"`` with ``timestamps``)."""

    type: Literal["speech.sentence"] = "speech.sentence"


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
_CLIENT_TYPES = ("speak", "prepare", "cancel")
_SERVER_TYPES = ("start", "sentence_start", "sentence_end", "done", "error", "cancelled", "prepare", "prepared")


def _parse(raw: str | bytes | dict[str, Any], adapter: TypeAdapter[Any], types: tuple[str, ...], who: str,
           default: str | None = None) -> Any:
    if isinstance(raw, dict):
        message: Any = raw
    else:
        try:
            message = json.loads(raw)
        except ValueError:
            raise ProtocolError(f"{who} message is not JSON") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"{who} message is not a JSON object")
    kind = message.get("type", default)
    if kind not in types:
        raise ProtocolError(f"unknown {who} message type {kind!r} (protocol {PROTOCOL} has {', '.join(types)}): "
                            "the client and the server must run the same OmniStudio version")
    try:
        return adapter.validate_python({**message, "type": kind})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"][1:]) or "message"
        raise ProtocolError(f"{kind} message: {where}: {first['msg']}") from None


def parse_client_message(raw: str | bytes | dict[str, Any]) -> WsRequest | WsPrepare | WsCancel:
    """A client's WebSocket message (a message without ``type`` is a ``speak``)."""
    message: WsRequest | WsPrepare | WsCancel = _parse(raw, _CLIENT, _CLIENT_TYPES, "client", default="speak")
    return message


def parse_server_event(raw: str | bytes | dict[str, Any]) -> ServerEvent:
    """A server's WebSocket event."""
    event: ServerEvent = _parse(raw, _SERVER, _SERVER_TYPES, "server")
    return event


def frame(message: BaseModel) -> str:
    """A message as the text frame that carries it."""
    return message.model_dump_json()


# --------------------------------------------------------------- responses
class EngineInfo(BaseModel):
    """What runs behind the server: its model, device, dtype and sampler (``/health``'s ``engine``)."""

    model_config = ConfigDict(extra="allow")

    model: str = "?"
    device: str = "?"
    dtype: str = "?"
    sampler: str = "?"
    threads: int | None = None  # torch's thread count where it renders (a take's floats depend on it)
    quantisation: str = "none"
    max_batch: int = 1


class Health(BaseModel):
    """``GET /health``: 200 once the engine is ready, else 503 with what it is doing (``detail``)."""

    model_config = ConfigDict(extra="ignore")

    status: str
    detail: str = ""
    protocol: int | None = None  # None: a server older than the protocol's version field
    active: int = 0
    max_queue: int = 0
    sample_rate: int | None = None
    engine: EngineInfo | None = None


class VoiceEntry(BaseModel):
    """One anchor: its languages, the state of its prompt per language, and the voice strings it takes."""

    model_config = ConfigDict(extra="ignore")

    id: str
    name: str
    languages: list[str] = Field(default_factory=list)
    prompts: dict[str, str] = Field(default_factory=dict)
    custom: bool = False
    examples: list[str] = Field(default_factory=list)


class DuoEntry(BaseModel):
    """A canonical duo: the blend ``voice`` string, its two anchors and its alpha."""

    model_config = ConfigDict(extra="ignore")

    voice: str
    anchors: tuple[str, str]
    languages: list[str] = Field(default_factory=list)
    alpha: float


class VoiceListing(BaseModel):
    """``GET /v1/audio/voices``."""

    model_config = ConfigDict(extra="ignore")

    object: Literal["list"] = "list"
    voices: list[VoiceEntry]
    duos: list[DuoEntry] = Field(default_factory=list)
    blend_syntax: str = "anchor_a+anchor_b@alpha (alpha in [0, 1]); add :lang for a language"


class VoiceUpload(BaseModel):
    """``POST /v1/audio/voices``' form fields (besides ``file``, the recording): a recorded voice (name,
    language, gender, consent; transcript optional) or, with ``instructions`` and ``seed``, a design voice."""

    model_config = ConfigDict(extra="forbid")

    name: str
    language: str | None = None
    gender: str | None = None
    age: str | None = None
    pitch: str | None = None
    style: str | None = None
    accent: str | None = None
    transcript: str | None = None
    consent: str | None = None
    instructions: str | None = None
    seed: int | None = None
    replace: bool = False


class VoiceLanguageBody(BaseModel):
    """How a voice sounds in one language (a recording is named by its content hash, never a path)."""

    kind: Literal["recording", "design", "matched"]
    prompt: str  # missing | ready | stale | invalid | error | unchecked
    transcript: str | None = None
    consent: str | None = None
    recording_sha256: str | None = None
    matched: str | None = None
    instruct: str | None = None
    source_sha256: str | None = None


class VoiceDetail(BaseModel):
    """``GET /v1/audio/voices/{id}``, and the voice in :class:`VoiceAdded`."""

    model_config = ConfigDict(extra="ignore")

    object: Literal["voice"] = "voice"
    id: str
    name: str
    custom: bool
    seed: int
    attributes: dict[str, str | None]
    languages: dict[str, VoiceLanguageBody]


class VoiceAdded(VoiceDetail):
    """``POST /v1/audio/voices`` (201): the voice, with its prompt built, and how its transcript was had."""

    created: bool  # false: a custom voice gained a language or was replaced
    language: str | None = None  # the recording's (None: a design voice)
    transcript: str | None = None
    transcript_source: Literal["given", "asr"] | None = None  # "asr": none was given, the server heard it
    asr_text: str | None = None


class VoiceDeleted(BaseModel):
    """``DELETE /v1/audio/voices/{id}``."""

    object: Literal["voice.deleted"] = "voice.deleted"
    id: str
    deleted: bool = True
    prompts_removed: int = 0
    recordings_removed: int = 0


Body = TypeVar("Body", bound=BaseModel)


def parse_response(model: type[Body], data: Any, route: str) -> Body:
    """A JSON response body as ``model``; a body that is not that shape is a ProtocolError naming the route."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise ProtocolError(f"{route} answered a body this client cannot read ({where}: {first['msg']})") from None
