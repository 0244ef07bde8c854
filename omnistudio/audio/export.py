"""Writing audio: atomic WAV/FLAC files (temp file in the same folder, then rename)."""

from __future__ import annotations

import json
import os
import tempfile
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


def atomic_write_bytes(path: Path, write: Any, suffix: str = "") -> None:
    """Call ``write(tmp_path)`` then rename over ``path``; a crash leaves the old file intact."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix or ".tmp", dir=path.parent or ".")
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_audio(path: Path, pcm: np.ndarray, sample_rate: int) -> None:
    """Write mono float32 PCM as WAV (float) or FLAC (24-bit), atomically."""
    import soundfile as sf

    suffix = check_output_path(path)
    fmt, subtype = FORMATS[suffix]
    data = np.asarray(pcm, dtype=np.float32)
    if not np.all(np.isfinite(data)):
        raise UserError("refusing to write audio containing NaN or infinite samples")
    atomic_write_bytes(path, lambda tmp: sf.write(str(tmp), data, sample_rate, format=fmt, subtype=subtype),
                       suffix=suffix)


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write a JSON document atomically."""
    atomic_write_bytes(path, lambda tmp: tmp.write_text(json.dumps(payload, indent=2) + "\n"), suffix=".json")
