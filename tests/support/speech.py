"""Real speech standing in for synthesised takes (random-weight checkpoints make noise): flite
recordings of a sentence, another sentence, or the sentence with a word dropped."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from support.voices import flite_wav

GOOD = "Good evening and welcome to the news desk."
MINISTER = "The minister resigned after twelve years."
DROPPED = "The minister resigned after years."  # one word of six missing: WER 1/6 > 15%
GLUE = "Glue the sheet to the dark blue background."
WRONG = "Rice is often served in round bowls."
SCRIPT = f"{GOOD}\n{MINISTER}\n{GLUE}\nHeavy rain is expected on Friday."


@functools.cache
def flite(text: str, voice: str = "slt") -> np.ndarray:
    """``text`` spoken by flite, as a take: float32 mono at 24 kHz."""
    import soundfile as sf
    from scipy.signal import resample_poly

    with tempfile.TemporaryDirectory() as folder:
        pcm, rate = sf.read(str(flite_wav(text, Path(folder) / "take.wav", voice)), dtype="float32")
    assert rate == 16_000
    return resample_poly(pcm, 3, 2).astype(np.float32)


class Recordings:
    """A synthesiser: what to say for (sentence text, n-th call for that sentence); counts calls."""

    def __init__(self, plan: dict[str, list[str]]) -> None:
        self.plan = plan
        self.calls: list[tuple[str, int]] = []

    def __call__(self, line: Any, seed: int) -> np.ndarray:
        return self.say(line.text, seed)

    def say(self, text: str, seed: int) -> np.ndarray:
        done = sum(1 for said, _ in self.calls if said == text)
        self.calls.append((text, seed))
        said = self.plan.get(text, [text])
        return flite(said[min(done, len(said) - 1)])


# About a minute of flite speech (two Whisper windows and more): news lines read twice over. Transcribed
# one 30 s window at a time without timestamps, half of it was lost (50% WER; 4% with every segment).
_NEWS = ["The minister resigned after twelve years in office.", "Heavy rain is expected on Friday across the north.",
         "Glue the sheet to the dark blue background.", "Rice is often served in round bowls.",
         "The train to the coast leaves at nine in the morning.", "Markets rose today after a quiet week of trading.",
         "A small boat drifted slowly towards the harbour wall.", "The children played football in the park until dark.",
         "She opened the window and listened to the birds outside.", "Good evening and welcome to the news desk."]
MINUTE = " ".join(_NEWS * 2 + _NEWS[:3])
