"""A recording's speaking pitch, for a new voice that arrives without a gender (OpenAI's ``voices.create``
sends none, and a voice's design in its other language needs one): the median fundamental frequency of its
voiced frames (librosa's pYIN), and the gender that pitch usually means."""

from __future__ import annotations

import numpy as np

MALE_BELOW_HZ = 165.0  # adult speaking F0: men ~85-155 Hz, women ~165-255 Hz


def median_f0(wave: np.ndarray, sample_rate: int) -> float | None:
    """The median F0 of the voiced frames in Hz (None: nothing voiced)."""
    # lazy: start-up (librosa)
    import librosa

    f0, voiced, _prob = librosa.pyin(np.asarray(wave, dtype=np.float32), fmin=60.0, fmax=400.0, sr=sample_rate,
                                     frame_length=2048)
    heard = f0[voiced & np.isfinite(f0)]
    return float(np.median(heard)) if heard.size else None


def gender_from_pitch(wave: np.ndarray, sample_rate: int) -> str | None:
    """``male`` or ``female`` from the median F0 (None: nothing voiced to tell by)."""
    f0 = median_f0(wave, sample_rate)
    return None if f0 is None else ("male" if f0 < MALE_BELOW_HZ else "female")
