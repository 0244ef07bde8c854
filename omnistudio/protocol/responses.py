"""HTTP responses: health, the engine, the voice listing and a voice's details."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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
    compile: str = "off"  # the backbone: off | compiling (eager meanwhile) | switching | compiled | failed (eager)
    graphs: str = "off"  # the diffusion step's CUDA graphs: off, or "N captured in S s"
    path: str = ""  # how the CPU path (dtype, int8) was chosen: a flag, the static rule, or a calibration
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
    language, gender, consent; transcript optional) or, with ``instructions`` and ``seed``, a design voice.
    OpenAI's shape too: ``type`` ``audio_sample`` (the recording as ``audio_sample``, ``consent`` a consent
    recording's id, language from it, gender heard from the pitch) or ``prompt`` (a described voice: the
    ``prompt`` as instructions, the seed from its text); ``model`` and ``script_hint`` are taken and unused."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["audio_sample", "prompt"] | None = None
    prompt: str | None = None
    model: str | None = None
    script_hint: str | None = None
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
    created_at: int = 0  # Unix seconds (OpenAI's Voice)
    type: Literal["audio_sample", "prompt"] = "audio_sample"  # OpenAI's names: a recording, or a design voice
    prompt: str | None = None  # a design voice's instructions
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


class VoiceConsentBody(BaseModel):
    """``/v1/audio/voice_consents``: a consent recording kept (OpenAI's ``VoiceConsent``)."""

    object: Literal["audio.voice_consent"] = "audio.voice_consent"
    id: str
    name: str
    language: str
    created_at: int


class VoiceConsentList(BaseModel):
    object: Literal["list"] = "list"
    data: list[VoiceConsentBody]
    first_id: str | None = None
    last_id: str | None = None
    has_more: bool = False


class VoiceConsentDeleted(BaseModel):
    object: Literal["audio.voice_consent"] = "audio.voice_consent"
    id: str
    deleted: bool = True
