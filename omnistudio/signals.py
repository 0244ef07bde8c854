"""SIGINT and SIGTERM as exceptions, and short stretches where they wait (a core leaf).

``install()`` (the CLI calls it first thing) makes SIGINT raise :class:`KeyboardInterrupt` and
SIGTERM raise :class:`~omnistudio.errors.Terminated`, so ``finally`` blocks remove temp files and
the CLI prints one line and exits 130 / 143. Inside ``with held():`` a signal waits until the block
ends: the renames that commit an output and its sidecar happen both or neither.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from omnistudio.errors import Terminated

_depth = 0
_pending: list[int] = []
_received: list[int] = []  # signals delivered through _handler (a library may turn the exception into another)


def _exception(signum: int) -> BaseException:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _handler(signum: int, _frame: object) -> None:
    _received.append(signum)
    if _depth:
        _pending.append(signum)
        return
    raise _exception(signum)


def _exit_now(signum: int, _frame: object) -> None:
    """Before the command starts nothing is open or half-written: say so in one line and leave."""
    import os
    import sys

    name = "terminated" if signum == signal.SIGTERM else "interrupted"
    try:
        sys.stderr.write(f"omnistudio: {name}\n")
        sys.stderr.flush()
    finally:
        os._exit(128 + signum)


def interruption() -> BaseException | None:
    """The exception for the last SIGINT/SIGTERM received, if any: an import interrupted by Ctrl-C can
    surface as an ImportError (numpy does that); the CLI still reports it as the interruption it was."""
    return _exception(_received[-1]) if _received else None


def install(early: bool = False) -> None:
    """Route SIGINT and SIGTERM through :func:`_handler` (main thread only; a no-op elsewhere).
    ``early``: while the program is still importing, exit at once with one line instead."""
    if threading.current_thread() is threading.main_thread():
        handler = _exit_now if early else _handler
        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)


@contextmanager
def held() -> Iterator[None]:
    """Defer SIGINT/SIGTERM (when :func:`install` routed them here) until the block ends."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if not _depth and _pending:
            signum = _pending[0]
            _pending.clear()
            raise _exception(signum)
