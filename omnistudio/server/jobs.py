"""A request becomes a job: the wire protocol's requests (:mod:`omnistudio.protocol`) checked and planned.

Fields are checked here with the package's own checks (one clear line each), and a request
becomes a :class:`SpeechJob`: the plain values a take is built from. Nothing in a request reaches
the filesystem except a shm name, checked by :func:`omnistudio.audio.shm.check_shm_name`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from omnistudio.audio.profiles import check_profile, check_target_lufs
from omnistudio.checks import check_language, check_num_step, check_seed, check_text
from omnistudio.errors import UserError
from omnistudio.protocol import (
    FORMATS,
    MAX_INPUT_CHARS,
    MAX_SCRIPT_CHARS,
    GenerateRequest,
    SpeechRequest,
    TakeFields,
    Timestamps,
    WsPrepare,
    WsRequest,
)
from omnistudio.protocol.elevenlabs import XiSpeechRequest
from omnistudio.script import parse_tag
from omnistudio.server.pipeline import PlannedSentence, TakeOptions, VoiceRef, parse_voice, plan
from omnistudio.take.incoming import IncomingScript
from omnistudio.text.lexicon import Lexicon
from omnistudio.text.lexicon_files import effective_lexicon
from omnistudio.text.ssml import is_ssml, read_ssml
from omnistudio.voices.roster import load_roster


@dataclass(frozen=True)
class SpeechJob:
    """What a take is built from: its planned sentences and options (checked, no model needed)."""

    sentences: list[PlannedSentence]
    options: TakeOptions
    stitch: bool = True  # False: each sentence's PCM as rendered (pre-planned items, for a remote link)
    target_lufs: float | None = None
    timestamps: Timestamps | None = None  # "sentence": spans; "word": and word times (see server.timestamps)
    true_peak_db: float | None = None  # the ceiling of the profile asked for (None: the finishing's default)


def check_format(value: str) -> str:
    fmt = (value or "").strip().lower()
    if fmt not in FORMATS:
        raise UserError(f"response_format '{value}' is not supported: use one of {', '.join(FORMATS)}")
    return fmt


def check_target(value: float | None) -> float | None:
    if value is None:
        return None

    return check_target_lufs(value)


def _options(req: TakeFields, lang: str, voice: VoiceRef | None) -> TakeOptions:
    """The request's take options; the lexicon is the server's, read now (``PUT /v1/lexicon`` or
    ``omnistudio lexicon add`` on its machine takes effect with the next request)."""

    return TakeOptions(num_step=check_num_step(req.num_step), guidance_scale=req.guidance_scale,
                       seed=check_seed(req.seed), speed=1.0 if req.speed is None else req.speed, batch=1, lang=lang,
                       voice=voice, normalize=req.normalize,
                       lexicon=effective_lexicon(None) if req.normalize else Lexicon()).validated()


def _text(text: str | None, limit: int, field: str) -> str:
    if text is not None and len(text) > limit:
        raise UserError(f"{field} is {len(text)} characters; the limit is {limit}")
    return check_text(text, field)


def plan_job(text: str, voice: str, language: str | None, req: TakeFields, ref: VoiceRef | None = None) -> SpeechJob:
    """Check everything a request asks for and plan its take with the one seed policy. A text that
    opens with ``<speak`` is SSML (:mod:`omnistudio.text.ssml`): its script text is planned, with its
    ``<sub>``/``<say-as>`` spoken forms over the server's lexicon for this request. ``ref``: the voice,
    made already (a request's design voice), instead of ``voice``."""
    ref, voice_lang = (ref, None) if ref is not None else _known_voice(voice)
    ssml = read_ssml(text, language or voice_lang) if is_ssml(text) else None
    options = _options(req, ssml.lang if ssml is not None else check_language(language or voice_lang or "en"), ref)
    if ssml is not None:
        text = ssml.script
        if len(ssml.lexicon) and not options.normalize:
            raise UserError("normalize: false cannot say SSML <sub> or <say-as> (their spoken forms go through "
                            "the text front-end): leave normalize on, or use <break> only")
        options = replace(options, lexicon=ssml.over(options.lexicon))
    speakers = None
    if any(line.lstrip().startswith("[") for line in text.splitlines()):  # speaker tags: known anchors only
        speakers = set(load_roster().anchors)
    sentences = plan(text, options, None, speakers)
    return _job(sentences, options, req)


def _job(sentences: list[PlannedSentence], options: TakeOptions, req: TakeFields) -> SpeechJob:
    """The job of ``sentences``: a ``profile`` gives the loudness target (``target_lufs`` still overrides it)
    and its true-peak ceiling."""
    if req.profile is not None:
        rule = check_profile(req.profile)
        target = check_target(req.target_lufs) if req.target_lufs is not None else rule.target_lufs
        return SpeechJob(sentences, options, True, target, req.timestamps, rule.true_peak_dbtp)
    return SpeechJob(sentences, options, True, check_target(req.target_lufs), req.timestamps)


def _known_voice(text: str) -> tuple[VoiceRef, str | None]:
    """``parse_voice``, with every anchor the text names known before the request is queued (one line with
    a close match): a blend's partner too, even at alpha 1, where the voice is its first anchor alone."""

    ref, lang = parse_voice(text)
    tag = parse_tag(text.strip(), 0)
    roster = load_roster()
    for anchor in (tag.blend.a, tag.blend.b) if tag.blend is not None else ref.anchors():
        roster.get(anchor)
    return ref, lang


def speech_job(req: SpeechRequest, design: VoiceRef | None = None) -> SpeechJob:
    """``design``: the request's design voice (``"voice": "design"`` with ``instructions``: made on the
    engine by :func:`omnistudio.server.voice_admin.design_voice`, which refuses instructions elsewhere)."""
    if design is None and req.instructions is not None and req.instructions.strip():
        raise UserError("instructions apply to voice 'design' only; leave them out for an anchor")
    return plan_job(_text(req.input, MAX_INPUT_CHARS, "input"), req.voice, req.language, req, design)


def generate_job(req: GenerateRequest) -> SpeechJob:
    return plan_job(_text(req.text, MAX_SCRIPT_CHARS, "text"), req.voice, req.language, req)


def ws_job(req: WsRequest) -> SpeechJob:
    if req.items:
        if req.timestamps is not None:
            raise UserError("timestamps: a speak with items gets each sentence's PCM unstitched, which has no "
                            "take times; send text or script to have them")
        options = _options(req, check_language(req.language or req.items[0].lang), None)
        sentences = []
        for index, item in enumerate(req.items):
            ref, _ = _known_voice(item.voice)
            pause = float(item.pause_s)
            if not (math.isfinite(pause) and 0.0 <= pause <= 10.0):
                raise UserError(f"item {index} pause_s {item.pause_s} is outside 0..10")
            sentences.append(PlannedSentence(index, _text(item.text, MAX_INPUT_CHARS, f"item {index} text"),
                                             ref, check_language(item.lang), check_seed(item.seed), pause))
        return SpeechJob(sentences, options, stitch=False, target_lufs=None)
    text = req.script if req.script is not None else req.text
    return plan_job(_text(text, MAX_SCRIPT_CHARS, "script" if req.script is not None else "text"),
                    req.voice, req.language, req)


def stream_job(req: WsRequest) -> tuple[SpeechJob, IncomingScript]:
    """A ``speak`` with ``input: "stream"``: its options checked now, its sentences planned as the text
    arrives (the same voice, language, seed policy and script rules as a whole text's)."""
    if req.text is not None or req.script is not None or req.items:
        raise UserError("input 'stream' takes its text in text messages: leave text, script and items out")
    return incoming_job(req.voice, req.language, req)


def incoming_job(voice: str, language: str | None, req: TakeFields) -> tuple[SpeechJob, IncomingScript]:
    """A take whose text arrives later (the WebSocket's streamed input, ElevenLabs' stream-input contexts):
    ``voice``, ``language`` and the options checked now; the script that plans each sentence as it completes."""
    ref, voice_lang = _known_voice(voice)
    options = _options(req, check_language(language or voice_lang or "en"), ref)
    return _job([], options, req), IncomingScript(options, options.seed, set(load_roster().anchors))


def prepare_voices(message: WsPrepare) -> list[tuple[VoiceRef, str]]:
    """A ``prepare`` message's voices, each parsed and known, with its language."""
    voices = []
    for entry in message.voices:
        ref, voice_lang = _known_voice(entry.voice)
        voices.append((ref, check_language(entry.lang or voice_lang or "en")))
    return voices


def xi_job(voice: str, req: XiSpeechRequest) -> SpeechJob:
    """ElevenLabs' ``POST /v1/text-to-speech/{voice_id}``: the text in ``voice`` (the path's), its language
    ``language_code`` (else the voice's), ``voice_settings.speed`` the take's speed, ``seed`` its seed;
    ``apply_text_normalization: "off"`` sends the text to the model as written."""
    speed = req.voice_settings.speed if req.voice_settings is not None else None
    fields = TakeFields(speed=speed, seed=req.seed or 0, normalize=req.apply_text_normalization != "off")
    return plan_job(_text(req.text, MAX_SCRIPT_CHARS, "text"), voice, req.language_code, fields)
