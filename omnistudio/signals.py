"""SIGINT and SIGTERM as exceptions, and short stretches where they wait (a core leaf).

``install()`` (the CLI calls it first thing) makes SIGINT raise :class:`KeyboardInterrupt` and
SIGTERM raise :class:`~omnistudio.errors.Terminated`, so ``finally`` blocks remove temp files and
the CLI prints one line and exits 130 / 143. Inside ``with held():`` a signal waits until the block
ends: the renames that commit an output and its sidecar happen both or neither. Once the command
has ended, :func:`settle` keeps the same contract until the process is gone (see there).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from omnistudio.errors import Terminated

_depth = 0
_pending: list[int] = []
_received: list[int] = []  # signals delivered through _handler (a library may turn the exception into another)
_late: list[int] = []  # signals between the command's end (ending) and settle: settle leaves at once
_ended = [False]


def _exception(signum: int) -> BaseException:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _handler(signum: int, _frame: object) -> None:
    _received.append(signum)
    if _ended[0]:
        _late.append(signum)
        return
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
        _ended[0] = False
        _late.clear()
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


_exit_status = [0]  # the status the command settled on (settle)
_unsaid: list[str] = []  # its one line, until written


def _say_ending() -> None:
    while _unsaid:
        line = _unsaid.pop()
        try:
            os.write(2, line.encode() + b"\n")
        except OSError:
            pass


def _leave(_signum: int, _frame: object) -> None:
    """A signal once the command has ended: flush what it printed and leave with its status."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - closed, a broken pipe, or the write this signal interrupted
            pass
    try:
        _say_ending()
    finally:
        os._exit(_exit_status[0])


def _ignore() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def own_exit() -> None:
    """For the process's own entry point, before any library registers an exit callback: the last
    callback to run ignores SIGINT/SIGTERM from there on. After the exit callbacks the interpreter
    stops running Python handlers and puts back the default action (a silent death by the signal)
    while it collects its garbage, which can take seconds; the run is over by then, so it ends with
    its own status."""
    atexit.register(_ignore)


def ending() -> None:
    """The command has returned (its output committed): a signal from here no longer raises, it is the
    ending's. Called inside the CLI's ``try`` as its last step, so a signal that comes before this call
    is still the command's interruption; one that comes after it, before :func:`settle`, is kept and
    ends the process in ``settle`` with the command's status (no traceback outside the ``try``)."""
    _ended[0] = True


def settle(code: int, line: str | None = None) -> None:
    """The command has ended with exit status ``code`` (and ``line``, written here, when it ended with
    one): from now until the process exits, SIGINT or SIGTERM ends it at once with that status and no
    other line, instead of raising into the interpreter's shut-down (a thread join, an atexit callback),
    where an exception can only be printed as "Exception ignored" or a traceback. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return
    _exit_status[0] = code
    if line is not None:
        _unsaid.append(line)
    signal.signal(signal.SIGINT, _leave)
    signal.signal(signal.SIGTERM, _leave)
    if _late:  # a signal between the command's end and here: leave now, as _leave would have
        _leave(_late[0], None)
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    _say_ending()
