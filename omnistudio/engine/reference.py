"""Reference recordings: read, check and describe them before OmniVoice sees them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from omnistudio.errors import UserError

MAX_REFERENCE_SECONDS = 30.0  # OmniVoice recommends 3-10 s and warns above 20 s
MIN_REFERENCE_SECONDS = 0.2
MIN_REFERENCE_DBFS = -60.0  # RMS; speech recordings sit near -20 dBFS, a voice below -60 is not there


@dataclass(frozen=True)
class Reference:
    """A reference recording with its exact transcript."""

    audio: Path
    text: str


def check_transcript(text: str | None, what: str = "reference") -> str:
    if text is None or not text.strip():
        raise UserError(f"the {what} recording needs its transcript (--ref-text)")
    return " ".join(text.split())


def read_reference(path: Path, label: str | None = None) -> tuple[np.ndarray, int]:
    """Read ``path`` as mono float32, or fail with one line saying what is wrong (naming the file as
    ``label`` when given: an upload has no path of the sender's to name)."""
    # lazy: start-up (soundfile)
    import soundfile as sf

    what = label or f"reference audio {path}"
    if not path.exists():
        raise UserError(f"{what} does not exist")
    if not path.is_file():
        raise UserError(f"{what} is not a file")
    if path.stat().st_size == 0:
        raise UserError(f"{what} is empty (0 bytes)")
    try:
        info = sf.info(str(path))
    except Exception:
        raise UserError(f"{what} is not a readable audio file") from None
    if info.frames <= 0 or info.samplerate <= 0:
        raise UserError(f"{what} has no samples")
    seconds = info.frames / info.samplerate
    if seconds > MAX_REFERENCE_SECONDS:
        raise UserError(
            f"{what} is {seconds:.1f} s long; the limit is "
            f"{MAX_REFERENCE_SECONDS:.0f} s (3-10 s works best)"
        )
    if seconds < MIN_REFERENCE_SECONDS:
        raise UserError(f"{what} is only {seconds * 1000:.0f} ms long; give at least 1 s")
    try:
        data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception:
        raise UserError(f"{what} could not be decoded") from None
    wave = data.mean(axis=1).astype(np.float32)
    if not np.all(np.isfinite(wave)):
        raise UserError(f"{what} contains NaN or infinite samples")
    rms = float(np.sqrt(np.mean(np.square(wave, dtype=np.float64))))
    if rms == 0.0 or math.isnan(rms):
        raise UserError(f"{what} is silent")
    level = 20 * math.log10(rms)
    if level < MIN_REFERENCE_DBFS:
        raise UserError(f"{what} is too quiet ({level:.0f} dBFS RMS; it needs at least "
                        f"{MIN_REFERENCE_DBFS:.0f} dBFS): record it louder or normalise it")
    return wave, int(sr)
