"""An exclusive lock between processes on a file (a core leaf): the user roster's read-modify-write
and a project's save hold it, so two commands at once both land.

The lock is ``flock`` on a lock file that is created and never removed (removing it would let a
third process lock a new file while a second holds the old one). It is advisory: only code that
takes it is kept out. The kernel drops it when the holder exits, even when killed.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` (created if missing; its folder must exist) for the
    ``with`` block, waiting while another process holds it."""
    with open(lock_file, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
