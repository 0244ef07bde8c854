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


def interruption() -> BaseException | None:
    """The exception for the last SIGINT/SIGTERM received, if any: an import interrupted by Ctrl-C can
    surface as an ImportError (numpy does that); the CLI still reports it as the interruption it was."""
    return _exception(_received[-1]) if _received else None


def install() -> None:
    """Route SIGINT and SIGTERM through :func:`_handler` (main thread only; a no-op elsewhere)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _handler)
        signal.signal(signal.SIGTERM, _handler)


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
