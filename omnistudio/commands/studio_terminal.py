"""The studio's terminal while its screen is up: file descriptor 2 goes to the studio's log.

A C library (ALSA's "underrun occurred", PortAudio, a CUDA warning) writes to file descriptor 2, under
Python: on a terminal those lines land over the studio's screen. Textual draws on ``sys.__stderr__``
(its Linux driver writes there), so :func:`library_output_to_log` first duplicates the terminal's fd 2
to a new descriptor and hands Python (``sys.__stderr__``, ``sys.stderr``) a file on that one, so the
screen still draws and a crash's traceback still reaches the terminal; only then does it put the log
file on fd 2. Python's log records go to the same file meanwhile. Everything is put back on the way
out, an exception included.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

KEEP_BYTES = 1_000_000  # a log past this size is moved to NAME.1 at the next start (one old log kept)


@contextmanager
def library_output_to_log(log: Path) -> Iterator[TextIO | None]:
    """Run the block with fd 2 on ``log`` (appended) and Python's stderr on the terminal; yields the
    terminal's stream (None, and nothing changed, where there is no fd 2 to move)."""
    terminal_stream = sys.__stderr__
    try:
        fd = terminal_stream.fileno() if terminal_stream is not None else -1
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd != 2 or terminal_stream is None:
        yield None
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists() and log.stat().st_size > KEEP_BYTES:
        log.replace(log.with_name(log.name + ".1"))
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(log_fd, f"--- studio started {time.strftime('%Y-%m-%d %H:%M:%S')} (pid {os.getpid()})\n".encode())
    terminal_stream.flush()
    terminal = os.fdopen(os.dup(2), "w", encoding=terminal_stream.encoding, errors="backslashreplace")
    saved = sys.__stderr__, sys.stderr
    root = logging.getLogger()
    handlers = root.handlers[:]
    to_log = logging.FileHandler(log, encoding="utf-8")
    to_log.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    setattr(sys, "__stderr__", terminal)  # noqa: B010 - typeshed marks it Final; Textual's driver reads it
    sys.stderr = terminal
    root.handlers = [to_log]
    os.dup2(log_fd, 2)
    try:
        yield terminal
    finally:
        terminal.flush()
        os.dup2(terminal.fileno(), 2)
        setattr(sys, "__stderr__", saved[0])  # noqa: B010
        sys.stderr = saved[1]
        root.handlers = handlers
        to_log.close()
        terminal.close()
        os.close(log_fd)
