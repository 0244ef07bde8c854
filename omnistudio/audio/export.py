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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from omnistudio.checks import check_number
from omnistudio.errors import UserError

FORMATS = {".wav": ("WAV", "FLOAT"), ".flac": ("FLAC", "PCM_24")}


def check_output_path(path: Path) -> str:
    """Fail early (before any work) if ``path`` cannot be written; return its format."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise UserError(f"unknown output extension '{path.suffix or '(none)'}' for {path}: use .wav or .flac")
    check_writable_path(path)
    return suffix


def check_writable_path(path: Path) -> None:
    """Fail early (before any work) if a file cannot be written at ``path``: a folder there, a
    missing or read-only folder."""
    if path.is_dir():
        raise UserError(f"output path {path} is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"output folder {parent} does not exist")
    try:  # really try: permission bits say little to root or on read-only mounts
        from omnistudio import tempfiles

        tempfiles.mkstemp(parent, path.name, ".probe").unlink()
    except OSError as exc:
        raise UserError(f"output folder {parent} is not writable ({exc.strerror})") from None


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name the same file (symlinks, '..', hard links): a path that does not
    exist yet is compared by its resolved name."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def check_not_input(output: Path, inputs: dict[str, Path | None], sidecar: bool = True) -> None:
    """Refuse (before any work) an output path, or its sidecar ``OUTPUT.json`` when the command
    writes one, that is one of the command's inputs: ``inputs`` maps a description ("the script",
    "the reference recording") to its path (None entries are skipped)."""
    written = [(Path(output), "output")]
    if sidecar:
        written.append((sidecar_path(Path(output)), "output's sidecar"))
    for path, role in written:
        for what, source in inputs.items():
            if source is not None and _same_file(path, Path(source)):
                raise UserError(f"the {role} {path} is {what} ({source}): writing it would destroy an input; "
                                "choose another output path")


def stage(path: Path, write: Callable[[Path], object], suffix: str = "", mode: int = 0o644) -> Path:
    """Call ``write(tmp_path)`` on a hidden temp file beside ``path``, fsync it and set its mode;
    return the temp path (removed again if anything fails). Temps left by a killed run are swept
    the next time something is written in that folder."""
    from omnistudio import tempfiles

    folder = path.parent if str(path.parent) else Path(".")
    tempfiles.sweep(folder)
    tmp = tempfiles.mkstemp(folder, path.name, suffix or ".tmp")
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None and exc.errno is not None:  # a write() failure names no file: name it
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def commit(staged: list[tuple[Path, Path]]) -> None:
    """Rename every ``(tmp, path)`` into place, in order, with SIGINT/SIGTERM held until all are
    done. Every temp was written and fsynced before (``stage``), so nothing can run out of space
    here: an output and its sidecar change together. Only a SIGKILL or power cut in the
    microseconds between two renames leaves the new first file beside the old second one; the
    sidecar names the audio's size (``audio_bytes``) so such a pair is recognisable."""
    from omnistudio.signals import held

    try:
        with held():
            for tmp, path in staged:
                os.replace(tmp, path)
    finally:
        for tmp, _path in staged:
            tmp.unlink(missing_ok=True)


def discard(staged: list[tuple[Path, Path]]) -> None:
    for tmp, _path in staged:
        tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: Path, write: Callable[[Path], object], suffix: str = "", mode: int = 0o644) -> None:
    """Call ``write(tmp_path)`` then rename over ``path`` (file mode ``mode``); a crash leaves the old file intact."""
    commit([(stage(path, write, suffix, mode), path)])


def as_pcm24(pcm: np.ndarray) -> NDArray[np.float32]:
    """Mono float32 samples as a 24-bit PCM file (a project's take, a FLAC export) gives them back:
    clipped to [-1, 1] and rounded to the nearest 1/2^23 (what libsndfile writes)."""
    scale = float(1 << 23)
    data = np.clip(np.asarray(pcm, dtype=np.float64), -1.0, 1.0)
    return (np.clip(np.round(data * scale), -scale, scale - 1) / scale).astype(np.float32)


def write_audio(path: Path, pcm: np.ndarray, sample_rate: int) -> None:
    """Write mono float32 PCM as WAV (float) or FLAC (24-bit), atomically."""
    suffix = check_output_path(path)
    data = np.asarray(pcm, dtype=np.float32)
    if not np.all(np.isfinite(data)):
        raise UserError("refusing to write audio containing NaN or infinite samples")
    atomic_write_bytes(path, lambda tmp: _write_samples(tmp, data, sample_rate, suffix), suffix=suffix)


def _write_samples(tmp: Path, data: np.ndarray, sample_rate: int, suffix: str) -> None:
    with AudioWriter(tmp, sample_rate, suffix) as writer:
        writer.write(data)


class AudioWriter:
    """Mono float32 blocks to a WAV (32-bit float, the same bytes as scipy's ``wavfile.write``: no
    PEAK chunk with a timestamp, so the same samples give the same file) or FLAC (24-bit) file."""

    def __init__(self, path: Path, sample_rate: int, suffix: str) -> None:
        self.path, self.sample_rate, self.frames = Path(path), int(sample_rate), 0
        self._wav = FORMATS[suffix][0] == "WAV"
        if self._wav:
            self._fh: Any = open(self.path, "wb")  # noqa: SIM115
            self._fh.write(self._wav_header(0))
        else:
            import soundfile as sf

            self._fh = sf.SoundFile(str(self.path), "w", self.sample_rate, 1, FORMATS[suffix][1], format="FLAC")

    def _wav_header(self, frames: int) -> bytes:
        import struct

        data = frames * 4
        return (b"RIFF" + struct.pack("<I", 50 + data) + b"WAVE" + b"fmt " +
                struct.pack("<IHHIIHHH", 18, 3, 1, self.sample_rate, self.sample_rate * 4, 4, 32, 0) +
                b"fact" + struct.pack("<II", 4, frames) + b"data" + struct.pack("<I", data))

    def write(self, block: np.ndarray) -> None:
        data = np.ascontiguousarray(block, dtype="<f4").ravel()
        try:
            if self._wav:
                self._fh.write(data.tobytes())
            else:
                self._fh.write(data)
        except RuntimeError as exc:  # libsndfile says only "System error." for a full disk
            raise _os_error_of(exc, self.path) from None
        self.frames += data.size

    def close(self) -> None:
        try:
            if self._wav:
                self._fh.seek(0)
                self._fh.write(self._wav_header(self.frames))
            self._fh.close()
        except RuntimeError as exc:
            raise _os_error_of(exc, self.path) from None

    def __enter__(self) -> AudioWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            try:
                self._fh.close()
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass


def _os_error_of(exc: BaseException, path: Path) -> BaseException:
    """libsndfile's "System error." as the OSError it hides (a full disk, most often)."""
    import errno
    import shutil

    try:
        if shutil.disk_usage(path.parent).free < (1 << 20):
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    except OSError:
        pass
    return OSError(errno.EIO, f"cannot write audio ({exc})", str(path))


def json_writer(payload: dict[str, Any]) -> Callable[[Path], object]:
    return lambda tmp: tmp.write_text(json.dumps(payload, indent=2) + "\n")


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write a JSON document atomically."""
    atomic_write_bytes(path, json_writer(payload), suffix=".json")


# --- loudness normalisation -------------------------------------------------------------------

TARGET_LUFS = -23.0  # EBU R128
PRESETS = {"ebu": -23.0, "podcast": -16.0, "streaming": -14.0}
TRUE_PEAK_DBTP = -1.0


def check_target_lufs(value: Any) -> float:
    """A target loudness in LUFS: a number in -70..0 or a preset name (ebu, podcast, streaming)."""
    if isinstance(value, str) and value.strip().lower() in PRESETS:
        return PRESETS[value.strip().lower()]
    return check_number(value, -70.0, 0.0, f"target loudness {value!r} is not a number (LUFS, e.g. -23, -16, "
                        f"-14, or one of {', '.join(PRESETS)})", f"target loudness {value} LUFS is outside -70..0")


def check_true_peak(value: Any) -> float:
    """A true-peak ceiling in dBTP: a number in -20..0."""
    return check_number(value, -20.0, 0.0, f"true-peak ceiling {value!r} is not a number (dBTP, e.g. -1)",
                        f"true-peak ceiling {value} dBTP is outside -20..0")


def limit_true_peak(pcm: np.ndarray, sample_rate: int, ceiling_db: float, window_ms: float = 5.0) -> np.ndarray:
    """Look-ahead peak limiter on the 4x-oversampled envelope: the gain is a smoothed running
    minimum of ceiling/peak, never above what any sample within the window needs."""
    from scipy.ndimage import minimum_filter1d
    from scipy.signal import resample_poly

    x = np.asarray(pcm, dtype=np.float64)
    env: NDArray[np.float64] = np.abs(resample_poly(x, 4, 1)).reshape(-1, 4).max(axis=1)
    need = np.minimum(1.0, 10 ** (ceiling_db / 20) / np.maximum(env, 1e-12))
    half = max(1, int(window_ms * sample_rate / 1000))
    gain: NDArray[np.float64] = minimum_filter1d(need, size=2 * half + 1, mode="nearest")
    weights = np.hanning(2 * half + 3)[1:-1]
    gain = np.convolve(np.pad(gain, half, mode="edge"), weights / weights.sum(), mode="valid")
    return x * np.minimum(gain, need)


def sidecar_path(path: Path) -> Path:
    """Where the telemetry JSON of an audio file goes: ``NAME.wav`` -> ``NAME.wav.json``."""
    return path.with_name(path.name + ".json")


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4) if math.isfinite(value) else None
    if isinstance(value, dict):
        return _json_safe_dict(value)
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _json_safe_dict(value: dict[str, Any]) -> dict[str, Any]:
    return {k: _json_safe(v) for k, v in value.items()}


def finished_sidecar(path: Path, sample_rate: int, frames: int, loudness: dict[str, Any], *,
                     sentences: list[dict[str, Any]] | None = None, timings: dict[str, Any] | None = None,
                     settings: dict[str, Any] | None = None, audio_bytes: int | None = None,
                     engine: dict[str, Any] | None = None, source: dict[str, Any] | None = None,
                     take: dict[str, Any] | None = None) -> dict[str, Any]:
    """The telemetry sidecar of a finished file (JSON-safe); ``engine``: what rendered it (model, device,
    backbone dtype, sampler, torch threads, quantisation); ``take``: the take's options (base seed, steps...)."""
    payload = {"output": str(path), "format": path.suffix.lower().lstrip("."), "sample_rate": sample_rate,
               "duration_s": frames / sample_rate, "audio_bytes": audio_bytes, "loudness": loudness,
               "settings": settings or {}, "sentences": sentences or [], "timings": timings or {}}
    if engine:
        payload["engine"] = engine
    if take:
        payload["take"] = take
    if source is not None:
        payload["source"] = source  # what the audio was made from (script hash, voice, model, seed...)
    return _json_safe_dict(payload)
