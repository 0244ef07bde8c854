"""Writing audio: atomic WAV/FLAC files (temp file in the same folder, then rename), loudness
normalisation to a target under a true-peak ceiling, and the telemetry sidecar JSON.

A killed process never leaves a half-written file at the output path: the data goes to a hidden
temp file beside it (``.NAME.XXXX.wav``), is fsynced, then renamed over the path. A SIGKILL
mid-write leaves the previous file intact (and may leave that temp file behind).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omnistudio.errors import UserError

FORMATS = {".wav": ("WAV", "FLOAT"), ".flac": ("FLAC", "PCM_24")}


def check_output_path(path: Path) -> str:
    """Fail early (before any work) if ``path`` cannot be written; return its format."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise UserError(f"unknown output extension '{path.suffix or '(none)'}' for {path}: use .wav or .flac")
    if path.is_dir():
        raise UserError(f"output path {path} is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"output folder {parent} does not exist")
    try:  # really try: permission bits say little to root or on read-only mounts
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UserError(f"output folder {parent} is not writable ({exc.strerror})") from None
    return suffix


def atomic_write_bytes(path: Path, write: Any, suffix: str = "", mode: int = 0o644) -> None:
    """Call ``write(tmp_path)`` then rename over ``path`` (file mode ``mode``); a crash leaves the old file intact."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix or ".tmp", dir=path.parent or ".")
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_audio(path: Path, pcm: np.ndarray, sample_rate: int) -> None:
    """Write mono float32 PCM as WAV (float) or FLAC (24-bit), atomically."""
    suffix = check_output_path(path)
    fmt, subtype = FORMATS[suffix]
    data = np.asarray(pcm, dtype=np.float32)
    if not np.all(np.isfinite(data)):
        raise UserError("refusing to write audio containing NaN or infinite samples")
    atomic_write_bytes(path, lambda tmp: _write_samples(tmp, data, sample_rate, fmt, subtype), suffix=suffix)


def _write_samples(tmp: Path, data: np.ndarray, sample_rate: int, fmt: str, subtype: str) -> None:
    """Float WAV through scipy (libsndfile adds a PEAK chunk with a timestamp, so the same
    samples would not give the same bytes); FLAC through soundfile."""
    if fmt == "WAV":
        from scipy.io import wavfile

        wavfile.write(str(tmp), sample_rate, data)
    else:
        import soundfile as sf

        sf.write(str(tmp), data, sample_rate, format=fmt, subtype=subtype)


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write a JSON document atomically."""
    atomic_write_bytes(path, lambda tmp: tmp.write_text(json.dumps(payload, indent=2) + "\n"), suffix=".json")


# --- loudness normalisation -------------------------------------------------------------------

TARGET_LUFS = -23.0  # EBU R128
PRESETS = {"ebu": -23.0, "podcast": -16.0, "streaming": -14.0}
TRUE_PEAK_DBTP = -1.0


def check_target_lufs(value: Any) -> float:
    """A target loudness in LUFS: a number in -70..0 or a preset name (ebu, podcast, streaming)."""
    if isinstance(value, str) and value.strip().lower() in PRESETS:
        return PRESETS[value.strip().lower()]
    try:
        target = float(value)
    except (TypeError, ValueError):
        raise UserError(f"target loudness {value!r} is not a number (LUFS, e.g. -23, -16, -14, "
                        f"or one of {', '.join(PRESETS)})") from None
    if not math.isfinite(target) or not -70.0 <= target <= 0.0:
        raise UserError(f"target loudness {value} LUFS is outside -70..0")
    return target


def check_true_peak(value: Any) -> float:
    """A true-peak ceiling in dBTP: a number in -20..0."""
    try:
        ceiling = float(value)
    except (TypeError, ValueError):
        raise UserError(f"true-peak ceiling {value!r} is not a number (dBTP, e.g. -1)") from None
    if not math.isfinite(ceiling) or not -20.0 <= ceiling <= 0.0:
        raise UserError(f"true-peak ceiling {value} dBTP is outside -20..0")
    return ceiling


def limit_true_peak(pcm: np.ndarray, sample_rate: int, ceiling_db: float, window_ms: float = 5.0) -> np.ndarray:
    """Look-ahead peak limiter on the 4x-oversampled envelope: the gain is a smoothed running
    minimum of ceiling/peak, never above what any sample within the window needs."""
    from scipy.ndimage import minimum_filter1d
    from scipy.signal import resample_poly

    x = np.asarray(pcm, dtype=np.float64)
    env = np.abs(resample_poly(x, 4, 1)).reshape(-1, 4).max(axis=1)
    need = np.minimum(1.0, 10 ** (ceiling_db / 20) / np.maximum(env, 1e-12))
    half = max(1, int(window_ms * sample_rate / 1000))
    gain = minimum_filter1d(need, size=2 * half + 1, mode="nearest")
    weights = np.hanning(2 * half + 3)[1:-1]
    gain = np.convolve(np.pad(gain, half, mode="edge"), weights / weights.sum(), mode="valid")
    return x * np.minimum(gain, need)


@dataclass(frozen=True)
class Normalised:
    pcm: np.ndarray
    gain_db: float  # the static gain applied before limiting
    limited: bool  # whether the limiter had to act


def normalise(pcm: np.ndarray, sample_rate: int, target_lufs: float = TARGET_LUFS,
              true_peak_db: float = TRUE_PEAK_DBTP) -> Normalised:
    """Gain to ``target_lufs`` (integrated, dual-mono), limiting true peaks to ``true_peak_db``."""
    from omnistudio.audio.loudness import measure

    x = np.asarray(pcm, dtype=np.float64)
    start = measure(x, sample_rate).integrated_lufs
    if not math.isfinite(start):
        raise UserError("the audio is silent (below the -70 LUFS gate): nothing to normalise")
    gain_db, limited, y = target_lufs - start, False, x
    for _ in range(4):  # the limiter lowers loudness a little: re-gain and limit again
        y = x * 10 ** (gain_db / 20)
        report = measure(y, sample_rate)
        if report.true_peak_dbtp > true_peak_db:
            y = limit_true_peak(y, sample_rate, true_peak_db - 0.05)
            limited = True
            report = measure(y, sample_rate)
        if abs(report.integrated_lufs - target_lufs) < 0.05 or not limited:
            break
        gain_db += target_lufs - report.integrated_lufs
    return Normalised(apply_ceiling(y, sample_rate, true_peak_db), gain_db, limited)


def apply_ceiling(pcm: np.ndarray, sample_rate: int, true_peak_db: float) -> np.ndarray:
    """Scale down (never up) so that the true peak is at or below the ceiling; float32 out."""
    from omnistudio.audio.loudness import measure

    y = np.asarray(pcm, dtype=np.float64)
    peak = measure(y, sample_rate).true_peak_dbtp
    if math.isfinite(peak) and peak > true_peak_db - 0.01:
        y = y * 10 ** ((true_peak_db - 0.02 - peak) / 20)
    return y.astype(np.float32)


def sidecar_path(path: Path) -> Path:
    """Where the telemetry JSON of an audio file goes: ``NAME.wav`` -> ``NAME.wav.json``."""
    return path.with_name(path.name + ".json")


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def export_finished(path: Path, pcm: np.ndarray, sample_rate: int, *, sentences: list[dict[str, Any]] | None = None,
                    timings: dict[str, Any] | None = None, settings: dict[str, Any] | None = None,
                    source: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write finished audio and its sidecar (loudness of what was written, sentences, timings); return the sidecar."""
    from omnistudio.audio.loudness import measure

    write_audio(path, pcm, sample_rate)
    payload = {"output": str(path), "format": path.suffix.lower().lstrip("."), "sample_rate": sample_rate,
               "duration_s": len(pcm) / sample_rate, "loudness": measure(pcm, sample_rate).as_dict(),
               "settings": settings or {}, "sentences": sentences or [], "timings": timings or {}}
    if source is not None:
        payload["source"] = source
    payload = _json_safe(payload)
    write_json(sidecar_path(path), payload)
    return payload
