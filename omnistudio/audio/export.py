"""Writing audio: atomic WAV/FLAC files (temp file in the same folder, then rename), loudness
normalisation to a target under a true-peak ceiling, and the telemetry sidecar JSON.

A killed process never leaves a half-written file at the output path: the data goes to a hidden
temp file beside it (``.NAME.XXXX.wav``), is fsynced, then renamed over the path. A SIGKILL
mid-write leaves the previous file intact (and may leave that temp file behind).

What is at an output path decides how it is written (:func:`destination`): a regular file or
nothing is replaced atomically; a symbolic link is followed (its target is written, the link
stays); a FIFO, a character device or ``-`` (standard output) is written into once the whole
file is ready (never replaced by a file); a block device, a socket or a folder is refused. A
group of files (audio, sidecar, captions) is committed all or nothing (:func:`commit`). No
writer puts a file inside a project folder (``NAME.omniproj``): its files are a project's inputs.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from omnistudio.checks import FloatLike, check_number
from omnistudio.errors import UserError

FORMATS = {".wav": ("WAV", "FLOAT"), ".flac": ("FLAC", "PCM_24"), ".mp3": ("MP3", "LAME"), ".m4a": ("M4A", "AAC")}
PROJECT_SUFFIX = ".omniproj"  # a project folder (omnistudio.projects): never written into by an output
STDOUT = "-"


@dataclass(frozen=True)
class Destination:
    """Where an output's bytes go: ``path`` (a link's target), replaced atomically, or ``stream``: a FIFO,
    a character device or standard output (``-``), written into once the whole file is ready."""

    path: Path
    stream: bool = False

    @property
    def stdout(self) -> bool:
        return str(self.path) == STDOUT


def destination(path: Path) -> Destination:
    """How an output at ``path`` is written (see the module docstring); a refusal is one line."""
    if str(path) == STDOUT:
        return Destination(Path(STDOUT), stream=True)
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there yet (its folder is checked apart)
        return Destination(path)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror}") from None
    if stat.S_ISLNK(mode):
        target = Path(os.path.realpath(path))
        if str(target) == STDOUT or os.path.islink(target):  # a loop: realpath stops on it
            raise UserError(f"output path {path} is a symbolic link that leads nowhere")
        return destination(target)
    if stat.S_ISREG(mode):
        return Destination(path)
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return Destination(path, stream=True)
    if stat.S_ISDIR(mode):
        raise UserError(f"output path {path} is a directory")
    kind = "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
    raise UserError(f"output path {path} is {kind}: write to a file, a FIFO or - (standard output)")


def _mode(path: Path) -> int:
    """The mode of what ``path`` leads to (0 when nothing is there)."""
    try:
        return os.stat(path).st_mode
    except OSError:
        return 0


def check_output_path(path: Path) -> str:
    """Fail early (before any work) if ``path`` cannot be written; return its format (``-`` and a
    FIFO or device without a known extension: WAV)."""
    suffix = path.suffix.lower()
    if not suffix and (str(path) == STDOUT or stat.S_ISFIFO(_mode(path)) or stat.S_ISCHR(_mode(path))):
        suffix = ".wav"  # a stream without an extension: WAV
    if suffix not in FORMATS:
        raise UserError(f"unknown output extension '{path.suffix or '(none)'}' for {path}: use .wav, .flac, .mp3 or .m4a")
    check_writable_path(path)
    return suffix


def check_stream_output(path: Path, *, prints_json: bool = False, beside: str = "") -> None:
    """An output written into a stream (a FIFO, a device, ``-``) takes the audio alone: refuse, in one
    line, a ``--json`` report that would share standard output with it, and files meant to go beside it
    (``beside``: the option that asks for them, e.g. "--captions")."""
    where = destination(path)
    if not where.stream:
        return
    if prints_json and where.stdout:
        raise UserError("-o - puts the audio on standard output: --json cannot go there too")
    if beside:
        raise UserError(f"{beside} writes files beside the audio, and {path} is "
                        f"{'standard output' if where.stdout else 'a FIFO or a device'}: write the audio to a file")


def project_holding(path: Path | str) -> Path | None:
    """The project folder (``NAME.omniproj``) that ``path`` is, or lies inside, if any: a file written
    there would overwrite a project's inputs (its takes, script or manifest)."""
    resolved = Path(os.path.realpath(Path(path).expanduser()))
    return next((p for p in (resolved, *resolved.parents) if p.suffix == PROJECT_SUFFIX), None)


def check_outside_projects(path: Path, flag: str = "") -> None:
    """Refuse an output inside a project folder (one line naming it)."""
    folder = project_holding(path)
    if folder is not None:
        named = f"{flag} {path}" if flag else str(path)
        raise UserError(f"{named} is in the project folder {folder}: its files are the project's inputs; "
                        "write the output outside it")


def check_writable_path(path: Path) -> None:
    """Fail early (before any work) if a file cannot be written at ``path``: a folder or a socket there,
    a missing or read-only folder, a project folder. A FIFO, a device or ``-`` is written into as is."""
    where = destination(path)
    if where.stream:
        if where.stdout and sys.stdout.isatty():
            raise UserError("refusing to write audio to a terminal: redirect standard output (-o - > FILE)")
        return
    path = where.path
    check_outside_projects(path)
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
    """Call ``write(tmp_path)`` on a hidden temp file beside ``path`` (beside a link's target; in the
    temp folder for a FIFO, a device or standard output), fsync it and set its mode; return the temp
    path (removed again if anything fails). Temps left by a killed run are swept the next time
    something is written in that folder."""
    import tempfile

    from omnistudio import tempfiles

    where = destination(path)
    folder = Path(tempfile.gettempdir()) if where.stream else where.path.parent if str(where.path.parent) else Path(".")
    tempfiles.sweep(folder)
    tmp = tempfiles.mkstemp(folder, path.name if not where.stdout else "stdout", suffix or ".tmp")
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
    """Put every staged ``(tmp, path)`` in place, all or nothing, naming the user's file on failure.

    Streams (a FIFO, a device, standard output) are written first: they cannot be taken back, and a
    reader may be slow, so signals are not held for them. Then, with SIGINT/SIGTERM held: each file
    already at a path is kept aside (a hard link beside it: a file that cannot be linked, e.g.
    immutable, fails here, before anything changed), the temps are renamed into place, and if one
    rename fails the ones done are undone, so the group stays as it was. Every temp was written and
    fsynced before (``stage``). Only a SIGKILL or power cut between two renames leaves a mixed group;
    the sidecar names the audio's size (``audio_bytes``) so such a pair is recognisable."""
    from omnistudio.signals import held

    places = [(tmp, destination(path), path) for tmp, path in staged]
    kept: list[tuple[Path, Path | None]] = []  # (target, its old file kept aside, or None: it was new)
    try:
        for tmp, where, path in places:
            if where.stream:
                _stream_into(tmp, where, path)
        with held():
            files = [(tmp, where.path, path) for tmp, where, path in places if not where.stream]
            for _tmp, target, path in files:
                kept.append((target, _keep_aside(target, path)))
            done = 0
            try:
                for tmp, target, path in files:
                    try:
                        os.replace(tmp, target)
                    except OSError as exc:
                        raise OSError(exc.errno, exc.strerror, str(path)) from None
                    done += 1
            except BaseException:
                for (target, old), _file in zip(reversed(kept[:done]), reversed(files[:done])):
                    _undo(target, old)
                raise
    finally:
        for tmp, _where, _path in places:
            tmp.unlink(missing_ok=True)
        for _target, old in kept:
            if old is not None:
                old.unlink(missing_ok=True)


def _keep_aside(target: Path, path: Path) -> Path | None:
    """A hard link to the file at ``target`` (None if there is none), to put back if the group fails."""
    from omnistudio import tempfiles

    if not target.exists():
        return None
    aside = tempfiles.mkstemp(target.parent if str(target.parent) else Path("."), target.name, ".old")
    aside.unlink()
    try:
        os.link(target, aside)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    return aside


def _undo(target: Path, old: Path | None) -> None:
    try:
        if old is None:
            target.unlink(missing_ok=True)
        else:
            os.replace(old, target)
    except OSError:  # best effort: the error being raised says what failed
        pass


def _stream_into(tmp: Path, where: Destination, path: Path) -> None:
    """Copy a finished temp file into a FIFO, a device or standard output."""
    import shutil

    try:
        if where.stdout:
            sys.stdout.flush()
            with open(tmp, "rb") as src:
                shutil.copyfileobj(src, sys.stdout.buffer, 1 << 20)
            sys.stdout.buffer.flush()
            return
        with open(tmp, "rb") as src, open(where.path, "wb", buffering=0) as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None


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


def json_writer(payload: Mapping[str, object]) -> Callable[[Path], object]:
    return lambda tmp: tmp.write_text(json.dumps(payload, indent=2) + "\n")


def write_json(path: Path, payload: Mapping[str, object]) -> None:
    """Write a JSON document atomically."""
    atomic_write_bytes(path, json_writer(payload), suffix=".json")


# --- loudness normalisation -------------------------------------------------------------------

TARGET_LUFS = -23.0  # EBU R128
TRUE_PEAK_DBTP = -1.0


def _presets() -> dict[str, float]:
    from omnistudio.audio.profiles import RULES

    return {key: rule.target_lufs for key, rule in RULES.items()}


PRESETS = _presets()  # a profile's name as a target (--target-lufs ebu): the rules' table (audio/profiles.py)


def check_target_lufs(value: FloatLike) -> float:
    """A target loudness in LUFS: a number in -70..0 or a preset name (ebu, podcast, streaming)."""
    if isinstance(value, str) and value.strip().lower() in PRESETS:
        return PRESETS[value.strip().lower()]
    return check_number(value, -70.0, 0.0, f"target loudness {value!r} is not a number (LUFS, e.g. -23, -16, "
                        f"-14, or one of {', '.join(PRESETS)})", f"target loudness {value} LUFS is outside -70..0")


def check_true_peak(value: FloatLike) -> float:
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


def _json_safe(value: object) -> object:
    if isinstance(value, float):
        return round(value, 4) if math.isfinite(value) else None
    if isinstance(value, dict):
        return _json_safe_dict(value)
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _json_safe_dict(value: Mapping[str, object]) -> dict[str, object]:
    return {k: _json_safe(v) for k, v in value.items()}


def finished_sidecar(path: Path, sample_rate: int, frames: int, loudness: Mapping[str, object], *,
                     sentences: Sequence[Mapping[str, object]] | None = None,
                     timings: Mapping[str, object] | None = None, settings: Mapping[str, object] | None = None,
                     audio_bytes: int | None = None, engine: Mapping[str, object] | None = None,
                     source: Mapping[str, object] | None = None,
                     take: Mapping[str, object] | None = None) -> dict[str, object]:
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
