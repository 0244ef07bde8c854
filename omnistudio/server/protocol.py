"""Request and response shapes of every route, the OpenAI error shape, and the WebSocket messages.

Fields are checked here with the package's own checks (one clear line each), and a request
becomes a :class:`SpeechJob`: the plain values a take is built from. Nothing in a request reaches
the filesystem except a shm name, checked by :func:`omnistudio.audio.shm.check_shm_name`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from omnistudio.checks import DEFAULT_NUM_STEP, check_language, check_num_step, check_seed, check_text
from omnistudio.errors import UserError
from omnistudio.server.pipeline import PlannedSentence, TakeOptions, VoiceRef, parse_voice, plan
from omnistudio.take.remote_conn import WS_ROUTE as WS_ROUTE  # the one route string, shared with the client

MAX_INPUT_CHARS = 4096  # OpenAI's limit for /v1/audio/speech input
MAX_SCRIPT_CHARS = 20_000  # /tts/* and the WebSocket take whole scripts
MAX_BODY_BYTES = 1 << 20
MAX_ITEMS = 512
FORMATS = ("wav", "flac", "mp3", "opus", "pcm")
MODEL_ID = "omnivoice"
DEFAULT_VOICE = "ruby"


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


class _Options(BaseModel):
    model_config = ConfigDict(extra="ignore")

    language: str | None = None
    num_step: int | str = DEFAULT_NUM_STEP
    seed: int | str = 0
    guidance_scale: float = 2.0
    speed: float | None = None
    target_lufs: float | None = None


class SpeechRequest(_Options):
    """``POST /v1/audio/speech`` (OpenAI), plus OmniStudio's extra fields."""

    model: str = MODEL_ID
    input: str = ""
    voice: str = DEFAULT_VOICE
    response_format: str = "mp3"
    instructions: str | None = None  # accepted, ignored: voices are anchors and blends
    stream_format: str = "audio"


class GenerateRequest(_Options):
    """``POST /tts/generate`` and ``/tts/generate-shm`` (the seed's routes)."""

    text: str = ""
    voice: str = DEFAULT_VOICE
    name: str | None = None  # generate-shm: the /dev/shm file name


class WsItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str
    voice: str
    lang: str
    seed: int
    pause_s: float = 0.0


class WsRequest(_Options):
    """The one JSON message that opens a ``/ws/tts/stream-omni`` session."""

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
    """``{"type": "prepare", "voices": [{"voice", "lang"}, ...]}``: a remote studio's prepare phase
    (every voice resolved on the engine worker; no take, no queue slot)."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["prepare"] = "prepare"
    voices: list[WsPrepareVoice] = Field(min_length=1, max_length=MAX_ITEMS)

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> WsPrepare:
        """The message checked, one line per mistake (the message's own words, not pydantic's)."""
        wanted = message.get("voices")
        if not isinstance(wanted, list) or not wanted or len(wanted) > MAX_ITEMS:
            raise UserError(f"prepare: 'voices' must list 1..{MAX_ITEMS} {{voice, lang}} objects")
        if not all(isinstance(entry, dict) for entry in wanted):
            raise UserError("prepare: each voice is an object {voice, lang}")
        return cls(voices=[WsPrepareVoice(voice=str(entry.get("voice", "")),
                                          lang=str(entry["lang"]) if entry.get("lang") else None)
                           for entry in wanted])


@dataclass(frozen=True)
class SpeechJob:
    """What a take is built from: its planned sentences and options (checked, no model needed)."""

    sentences: list[PlannedSentence]
    options: TakeOptions
    stitch: bool = True  # False: each sentence's PCM as rendered (pre-planned items, for a remote link)
    target_lufs: float | None = None


def check_format(value: str) -> str:
    fmt = (value or "").strip().lower()
    if fmt not in FORMATS:
        raise UserError(f"response_format '{value}' is not supported: use one of {', '.join(FORMATS)}")
    return fmt


def check_target(value: float | None) -> float | None:
    if value is None:
        return None
    from omnistudio.audio.export import check_target_lufs

    return check_target_lufs(value)


def _options(req: _Options, lang: str, voice: VoiceRef | None) -> TakeOptions:
    return TakeOptions(num_step=check_num_step(req.num_step), guidance_scale=req.guidance_scale,
                       seed=check_seed(req.seed),
                       speed=1.0 if req.speed is None else req.speed, batch=1, lang=lang, voice=voice).validated()


def _text(text: str | None, limit: int, field: str) -> str:
    if text is not None and len(text) > limit:
        raise UserError(f"{field} is {len(text)} characters; the limit is {limit}")
    try:
        return check_text(text)
    except UserError:
        raise UserError(f"{field} is empty") from None


def plan_job(text: str, voice: str, language: str | None, req: _Options) -> SpeechJob:
    """Check everything a request asks for and plan its take with the one seed policy."""
    ref, voice_lang = parse_voice(voice)
    _known(ref)
    options = _options(req, check_language(language or voice_lang or "en"), ref)
    speakers = None
    if any(line.lstrip().startswith("[") for line in text.splitlines()):  # speaker tags: known anchors only
        from omnistudio.voices.roster import load_roster

        speakers = set(load_roster().anchors)
    sentences = plan(text, options, None, speakers)
    return SpeechJob(sentences, options, True, check_target(req.target_lufs))


def _known(ref: VoiceRef) -> VoiceRef:
    """Unknown anchors fail here, before the request is queued (one line with a close match)."""
    from omnistudio.voices.roster import load_roster

    roster = load_roster()
    for anchor in ref.anchors():
        roster.get(anchor)
    return ref


def speech_job(req: SpeechRequest) -> SpeechJob:
    return plan_job(_text(req.input, MAX_INPUT_CHARS, "input"), req.voice, req.language, req)


def generate_job(req: GenerateRequest) -> SpeechJob:
    return plan_job(_text(req.text, MAX_SCRIPT_CHARS, "text"), req.voice, req.language, req)


def ws_job(req: WsRequest) -> SpeechJob:
    if req.items:
        options = _options(req, check_language(req.language or req.items[0].lang), None)
        sentences = []
        for index, item in enumerate(req.items):
            ref, _ = parse_voice(item.voice)
            pause = float(item.pause_s)
            if not (math.isfinite(pause) and 0.0 <= pause <= 10.0):
                raise UserError(f"item {index} pause_s {item.pause_s} is outside 0..10")
            sentences.append(PlannedSentence(index, _text(item.text, MAX_INPUT_CHARS, f"item {index} text"),
                                             _known(ref), check_language(item.lang), check_seed(item.seed), pause))
        return SpeechJob(sentences, options, stitch=False, target_lufs=None)
    text = req.script if req.script is not None else req.text
    return plan_job(_text(text, MAX_SCRIPT_CHARS, "script" if req.script is not None else "text"),
                    req.voice, req.language, req)


# --------------------------------------------------------- WebSocket frames
def ws_start(sample_rate: int, pcm: str, sentences: int) -> dict[str, Any]:
    return {"type": "start", "sample_rate": sample_rate, "channels": 1, "pcm": pcm, "sentences": sentences}


def ws_sentence_start(index: int, text: str, voice: str, lang: str) -> dict[str, Any]:
    return {"type": "sentence_start", "index": index, "text": text, "voice": voice, "lang": lang}


def ws_sentence_end(index: int, frames: int, timings: dict[str, Any], loudness: dict[str, Any],
                    steps: int) -> dict[str, Any]:
    return {"type": "sentence_end", "index": index, "frames": frames, "steps": steps, "timings": timings,
            "loudness": loudness}


def ws_done(summary: dict[str, Any]) -> dict[str, Any]:
    return {"type": "done", **summary}


def ws_error(message: str) -> dict[str, Any]:
    return {"type": "error", "message": message}
