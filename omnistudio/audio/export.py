"""Where outputs may go and what a finished file's sidecar says: the output-path rules (a known format, a
writable folder, never a project folder or one of the command's own inputs, a stream only for the audio
alone) and the telemetry sidecar JSON. Files are written through :mod:`omnistudio.commit` (staged, then
committed all or nothing). No writer puts a file inside a project folder (``NAME.omniproj``): its files
are a project's inputs.
"""

from __future__ import annotations

import math
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from omnistudio import tempfiles
from omnistudio.commit import STDOUT, destination
from omnistudio.errors import UserError

FORMATS = {".wav": ("WAV", "FLOAT"), ".flac": ("FLAC", "PCM_24"), ".mp3": ("MP3", "LAME"), ".m4a": ("M4A", "AAC")}
PROJECT_SUFFIX = ".omniproj"  # a project folder (omnistudio.projects): never written into by an output


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


def as_pcm24(pcm: np.ndarray) -> NDArray[np.float32]:
    """Mono float32 samples as a 24-bit PCM file (a project's take, a FLAC export) gives them back:
    clipped to [-1, 1] and rounded to the nearest 1/2^23 (what libsndfile writes)."""
    scale = float(1 << 23)
    data = np.clip(np.asarray(pcm, dtype=np.float64), -1.0, 1.0)
    return (np.clip(np.round(data * scale), -scale, scale - 1) / scale).astype(np.float32)


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
