"""Temp files and build folders named after the process that makes them, so that the next run can
remove the ones a killed run left (a core leaf).

A temp name carries ``omni-<pid>-``: ``.out.wav.omni-4242-x1y2.wav``, ``.tiny-omni-4242-abcd/``.
:func:`sweep` removes those in a folder whose process is gone.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

_MARK = re.compile(r"^\..*[.-]omni-(\d+)-")


def prefix(name: str, sep: str = ".") -> str:
    """The temp-name prefix for ``name`` made by this process: ``.NAME.omni-PID-``."""
    return f".{name}{sep}omni-{os.getpid()}-"


def mkstemp(folder: Path, name: str, suffix: str = ".tmp") -> Path:
    """A new empty temp file for ``name`` in ``folder`` (closed)."""
    fd, tmp = tempfile.mkstemp(prefix=prefix(name), suffix=suffix, dir=folder)
    os.close(fd)
    return Path(tmp)


def mkdtemp(folder: Path, name: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix(name, "-"), dir=folder))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def sweep(folder: Path) -> list[Path]:
    """Remove the temp files and build folders in ``folder`` left by processes that are gone."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _MARK.match(entry.name)
        if match is None or _alive(int(match.group(1))):
            continue
        path = Path(entry.path)
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
        except OSError:
            continue
    return removed


def quarantine(path: Path, reason: str) -> Path:
    """Move a cache file or folder that failed to load aside, as ``NAME.REASON-STAMP`` beside it
    (kept for a post-mortem, never loaded again), so that it can be rebuilt; return the new path."""

    slug = re.sub(r"[^a-z0-9]+", "-", reason.lower()).strip("-")[:40] or "broken"
    base = path.with_name(f"{path.name}.{slug}-{time.strftime('%Y%m%dT%H%M%S')}")
    target, n = base, 1
    while target.exists():
        n += 1
        target = base.with_name(f"{base.name}-{n}")
    os.replace(path, target)
    return target
