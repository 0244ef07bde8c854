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
