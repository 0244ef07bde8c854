"""Sentence and word times on the wire (``timestamps``): the same shapes on every route."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from omnistudio.protocol.requests import Timestamps

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
