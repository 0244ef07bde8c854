"""What each MCP tool does, on the core's own paths (no copy of any): a take is planned by
:func:`omnistudio.take.scripts.plan_script`, built by :func:`omnistudio.take.pipeline.build_take`
and finished by the :class:`~omnistudio.take.sinks.FileSink` (loudness, sidecar, captions in one
atomic commit), as ``omnistudio render -o OUT [--captions]`` does; a take is checked by
``omnistudio check``'s core, a text by the front-end, the voices listed as ``GET /v1/audio/voices``."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from omnistudio.captions.formats import CaptionOptions
from omnistudio.checks import check_language, check_text
from omnistudio.errors import UserError
from omnistudio.mcp.backend import Backend
from omnistudio.mcp.folder import OutputFolder
from omnistudio.mcp.running import Report, Steps
from omnistudio.text.answer import normalize_answer
from omnistudio.text.lexicon_files import effective_lexicon

if TYPE_CHECKING:
    from omnistudio.protocol import NormalizeResponse, VoiceListing

AudioFormat = Literal["wav", "flac"]
CaptionFormat = Literal["srt", "vtt"]


class RenderedFile(BaseModel):
    """A finished take in the output folder."""

    name: str = Field(description="the file's name in the output folder (what check_take takes)")
    path: str = Field(description="the file's absolute path")
    sidecar: str = Field(description="its JSON sidecar (settings, engine, per-sentence spans and words)")
    captions: list[str] = Field(default_factory=list, description="caption files written with it (SRT, WebVTT)")
    duration_s: float = Field(description="length of the finished audio in seconds")
    sample_rate: int
    sentences: int = Field(description="sentences rendered")
    seed: int = Field(description="the take's base seed (the same seed, text and voice give the same audio)")
    loudness: dict[str, float | None] = Field(
        description="the finished file's loudness figures (integrated LUFS, true peak dBTP, loudness range...)")


@dataclass(frozen=True)
class RenderAsk:
    """A take to render: a script (or one text), its default voice, and where it goes."""

    script: str
    voice: str | None
    language: str | None
    seed: int
    num_step: int
    audio_format: AudioFormat
    name: str
    captions: tuple[CaptionFormat, ...] = ()


def render(backend: Backend, folder: OutputFolder, ask: RenderAsk, cancel: threading.Event, report: Report,
           steps: Steps) -> RenderedFile:
    """Render ``ask`` to a finished file in ``folder`` (the take pipeline and the file sink of ``render -o``)."""
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.options import TakeOptions
    from omnistudio.take.pipeline import build_take
    from omnistudio.take.scripts import checked_voice, plan_script
    from omnistudio.take.sinks import FileSink

    # Every cheap check first: nothing is loaded or written for bad input.
    voice, voice_lang = checked_voice(ask.voice) if ask.voice is not None else (None, None)
    lang = check_language(ask.language or voice_lang or "en")
    options: TakeOptions = TakeOptions(num_step=ask.num_step, seed=ask.seed, lang=lang, normalize=True,
                                       lexicon=effective_lexicon(None)).validated()
    script, options = plan_script(ask.script, options, voice, "give a voice (an anchor id, anchor:lang or a+b@0.7)")
    captions = hearer = None
    if ask.captions:
        # lazy: start-up (numpy)
        from omnistudio.voices.words import caption_hearer

        captions = CaptionOptions(tuple(dict.fromkeys(ask.captions))).validated()
        hearer = caption_hearer(backend.asr_model)
    path = folder.output(ask.name, ask.audio_format)
    sink = FileSink(path, captions=captions, hearer=hearer)
    with backend.admitted(cancel):
        link = backend.link(lambda line: report(0, None, line))
        take = build_take(link, script, options)
        steps.read = lambda: take.stream.steps if take.stream is not None else 0
        total = len(take.sentences)
        done = [0]

        def on_chunk(_chunk: object) -> None:
            done[0] += 1
            report(done[0], total, f"sentence {done[0]}/{total} rendered")

        take.run([sink], progress=lambda event: report(0, total, event.describe()), cancel=cancel,
                 on_chunk=on_chunk)
    finished = sink.finished
    if finished is None:
        raise UserError("the take ended without a file")
    sidecar = finished.sidecar
    return RenderedFile(name=folder.name_of(finished.path), path=str(finished.path),
                        sidecar=str(finished.sidecar_path),
                        captions=[str(p) for p in (sidecar.get("captions", {}).get("files") or [])],
                        duration_s=float(sidecar["duration_s"]), sample_rate=int(sidecar["sample_rate"]),
                        sentences=total, seed=take.base_seed,
                        loudness={k: v for k, v in sidecar.get("loudness", {}).items()
                                  if k.endswith(("_lufs", "_lu", "_dbtp", "_dbfs", "_db"))})


class TakeCheck(BaseModel):
    """What the speech-recognition check found (``omnistudio check FILE --text``)."""

    name: str
    heard: str | None = Field(description="what Whisper heard (None: not checked, see note)")
    wer: float | None = Field(description="word error rate against the text, 0..1 (None: not checked)")
    passed: bool | None = Field(description="wer <= threshold; None: not checked")
    threshold: float
    model: str
    note: str


def check_take(backend: Backend, folder: OutputFolder, name: str, text: str, language: str,
               threshold: float) -> TakeCheck:
    # lazy: start-up (numpy)
    from omnistudio.projects.speech_check import check_file, check_threshold, open_checker

    path = folder.existing(name)
    text, lang, threshold = check_text(text), check_language(language), check_threshold(threshold)
    result = check_file(path, text, lang, open_checker(backend.asr_model, threshold))
    return TakeCheck(name=folder.name_of(path), **result.as_dict())


def list_voices(backend: Backend) -> VoiceListing:
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.listing import voice_listing

    return voice_listing(backend.link().voices())


def normalize_text(text: str, language: str) -> NormalizeResponse:
    return normalize_answer(text, language, effective_lexicon(None))


def default_name(stem: str) -> str:
    """A fresh file name in the output folder when the agent names none."""

    return f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
