"""Ground truth for word timings: flite speech whose every word onset is known.

Single English words and short phrases, each recorded alone by flite (voices slt, awb and rms, in
turn), trimmed of their leading and trailing silence and joined with known silences between them,
a few items to a "sentence". An item's onset is the first sample above :data:`ONSET_THRESHOLD_DB`
(relative to the item's peak); the trimmed item starts there. Inside a phrase, a word starts where
flite's own segment timing (``flite -psdur``) puts its first phone, counted from the same point.
flite is a system tool (``apt-get install flite``); without it the builder says so in one line.

Used by the alignment benchmark (``python -m omnistudio.bench.align``) and its test."""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from omnistudio.errors import UserError

RATE = 24_000  # the project's sample rate: recordings are resampled to it
ONSET_THRESHOLD_DB = -35.0  # a sample this far below the item's peak is silence
VOICES = ("slt", "awb", "rms")  # flite's clustergen voices: their segment times are the waveform's
GAPS_S = (0.35, 0.2, 0.5, 0.25, 0.7, 0.15, 0.4)  # the silences between items, in turn
EDGE_S = 0.2  # silence before the first item and after the last of each sentence
ITEMS_PER_SENTENCE = 7

WORDS = (
    "minister harbor yellow window market river garden morning evening weather coffee village station doctor "
    "teacher number pocket silver winter summer orange table kitchen mountain island forest ocean bridge castle "
    "paper letter money people country city police council budget border election president senator reporter "
    "camera picture music football hospital school student airport engine rocket planet science history future "
    "energy report storm thunder rain snow cloud sunshine wind fire water bread butter cheese apple lemon sugar "
    "pepper chicken dinner breakfast office building street corner traffic highway travel holiday journey ticket "
    "yesterday tomorrow tonight Monday Friday Sunday January August October seven eleven twenty hundred thousand "
    "million dollar price growth profit bank vote party leader speech crowd victory question answer problem animal "
    "horse tiger monkey elephant").split()
PHRASES = (
    "the minister resigned", "heavy rain", "good evening", "markets rose", "a quiet week", "dark blue",
    "open the window", "breaking news", "thank you", "next week", "the city council", "stock prices fell",
    "a cold morning", "the final score", "new elections", "high winds tonight", "the harbor wall", "small boats",
    "hot summer days", "early voting", "the border crossing", "five new cases", "clear skies", "heavy traffic",
    "the president spoke", "rising prices", "the local school", "two goals", "a long delay", "fresh bread",
)


@dataclass(frozen=True)
class TrueWord:
    text: str
    onset: float  # seconds from the start of the file
    after_pause: bool  # the first word of its item (a silence before it); else inside a phrase


@dataclass(frozen=True)
class TrueSentence:
    text: str
    start: float  # the sentence's span in the file (its leading and trailing silence included)
    end: float
    words: tuple[TrueWord, ...]


@dataclass(frozen=True)
class GroundTruth:
    pcm: np.ndarray  # float32 mono at RATE
    sentences: tuple[TrueSentence, ...]

    @property
    def words(self) -> list[TrueWord]:
        return [w for s in self.sentences for w in s.words]

    def audio(self, sentence: TrueSentence) -> np.ndarray:
        return self.pcm[round(sentence.start * RATE):round(sentence.end * RATE)]


def require_flite() -> None:
    if shutil.which("flite") is None:
        raise UserError("the word-timing ground truth is flite speech and flite is not installed "
                        "(apt-get install flite)")


def _flite(text: str, voice: str, folder: Path, flags: tuple[str, ...] = ()) -> tuple[np.ndarray, str]:
    """``text`` said by flite's ``voice``: float32 mono at :data:`RATE`, and what flite printed."""
    # lazy: start-up (scipy, soundfile)
    import soundfile as sf
    from scipy.signal import resample_poly

    path = folder / "item.wav"
    done = subprocess.run(["flite", "-voice", voice, *flags, "-t", text, "-o", str(path)], check=True,
                          capture_output=True, text=True)
    pcm, rate = sf.read(str(path), dtype="float32")
    g = np.gcd(int(rate), RATE)
    return resample_poly(pcm, RATE // g, int(rate) // g).astype(np.float32), done.stdout


def onset_bounds(pcm: np.ndarray) -> tuple[int, int]:
    """The first and one past the last sample above :data:`ONSET_THRESHOLD_DB` of the peak."""
    loud = np.flatnonzero(np.abs(pcm) >= np.abs(pcm).max() * 10 ** (ONSET_THRESHOLD_DB / 20))
    return int(loud[0]), int(loud[-1]) + 1


def _phones(words: list[str], folder: Path) -> list[int]:
    """How many phones flite says for each word alone (commas make flite pause between them)."""
    _pcm, printed = _flite(", ".join(words), VOICES[0], folder, ("-ps",))
    runs = " ".join(printed.split()).split("pau")
    counts = [len(run.split()) for run in runs if run.strip()]
    if len(counts) != len(words):
        raise UserError(f"flite's phones do not split into the words of {' '.join(words)!r}")
    return counts


def _item(text: str, voice: str, folder: Path, phone_counts: list[int]) -> tuple[np.ndarray, list[float]]:
    """A recorded item trimmed of silence, and each word's onset in it (seconds)."""
    pcm, printed = _flite(text, voice, folder, ("-psdur",))
    first, last = onset_bounds(pcm)
    onsets = [0.0]
    if len(phone_counts) > 1:
        ends = [(p.rsplit(":", 1)[0], float(p.rsplit(":", 1)[1])) for p in printed.split()]
        starts = [prev_end for (name, _), (_, prev_end) in zip(ends[1:], ends) if name != "pau"]
        if len(starts) != sum(phone_counts):
            raise UserError(f"flite said {text!r} with {len(starts)} phones, not {sum(phone_counts)}")
        at = 0
        for count in phone_counts[:-1]:
            at += count
            onsets.append(max(0.0, starts[at] - first / RATE))
    return pcm[first:last], onsets


@functools.cache
def ground_truth(min_words: int = 200) -> GroundTruth:
    """At least ``min_words`` words (single words and phrases in turn, three of one to one of the other, the
    voices in turn) in sentences of :data:`ITEMS_PER_SENTENCE` items: the same audio every time."""
    require_flite()
    items: list[str] = []
    singles, phrases = iter(WORDS * 4), iter(PHRASES * 8)
    while sum(len(i.split()) for i in items) < min_words:
        items.append(next(phrases) if len(items) % 4 == 3 else next(singles))
    with tempfile.TemporaryDirectory(prefix="omnistudio-onsets-") as name:
        folder = Path(name)
        counts = dict(zip(sorted({w for i in items for w in i.split()}),
                          _phones(sorted({w for i in items for w in i.split()}), folder)))
        parts: list[np.ndarray] = []
        sentences: list[TrueSentence] = []
        at = 0
        for first in range(0, len(items), ITEMS_PER_SENTENCE):
            group = items[first:first + ITEMS_PER_SENTENCE]
            start = at
            parts.append(np.zeros(round(EDGE_S * RATE), np.float32))
            at += parts[-1].size
            found: list[TrueWord] = []
            for place, item in enumerate(group):
                n = first + place
                if place:
                    parts.append(np.zeros(round(GAPS_S[n % len(GAPS_S)] * RATE), np.float32))
                    at += parts[-1].size
                pcm, onsets = _item(item, VOICES[n % len(VOICES)], folder, [counts[w] for w in item.split()])
                found += [TrueWord(w, at / RATE + o, k == 0) for k, (w, o) in enumerate(zip(item.split(), onsets))]
                parts.append(pcm)
                at += pcm.size
            parts.append(np.zeros(round(EDGE_S * RATE), np.float32))
            at += parts[-1].size
            sentences.append(TrueSentence(", ".join(group).capitalize() + ".", start / RATE, at / RATE,
                                          tuple(found)))
    return GroundTruth(np.concatenate(parts), tuple(sentences))
