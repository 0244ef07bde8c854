"""The one error type that reaches the user as a single clear line."""
import errno


class UserError(Exception):
    """A problem with what the user asked for or supplied.

    The CLI and the studio show ``str(err)`` as one line, with no traceback.
    """


class Unavailable(UserError):
    """The engine cannot be reached right now (a speech server down, restarting, busy, or the link to it
    lost); the same request may work later. Clients show it, keep everything, and try again."""


_UNSHOWN = frozenset([*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)])


def shown(text: str) -> str:
    """Text read from a file (bext, iXML, a marker's label, a tag, a sidecar), safe to print or draw: each
    control character (ESC, BEL, CR, LF, TAB, C1) and bidi override as its ``\\xNN`` escape, so a file can
    neither retitle nor clear a terminal, nor fake a line of output."""
    if not any(ord(c) in _UNSHOWN for c in text):
        return text
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 0x100 and ord(c) in _UNSHOWN else
                   f"\\u{ord(c):04x}" if ord(c) in _UNSHOWN else c for c in text)


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, or its type name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def describe(exc: BaseException) -> str:
    """``Type: first line`` of an unexpected exception (``Type`` alone when it has no message)."""
    return f"{type(exc).__name__}: {first_line(exc)}" if str(exc).strip() else type(exc).__name__


def ran_past(limit_s: float) -> str:
    """The line of a request stopped at the server's time limit (``--time-limit``), whatever route it came by."""
    return f"the request ran past the server's {limit_s:g} s limit"


class Cancelled(Exception):
    """Raised inside a synthesis (at the next diffusion step) when its caller cancelled it."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same clean-up runs (the CLI exits 143 for it)."""


# How the dynamic loader says a shared library did not fit in the address space (`ulimit -v`, low memory).
_NO_MEMORY_TO_LOAD = ("failed to map segment", "cannot allocate memory")
# How torch (and oneDNN under it) says an allocation failed: a RuntimeError, not a MemoryError. oneDNN's
# "could not create a primitive" is what a primitive's scratch allocation failing looks like under `ulimit -v`.
_NO_MEMORY_IN_TORCH = ("out of memory", "could not create a primitive", "can't allocate memory",
                       "not enough memory", "bad_alloc", "failed to allocate")


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` says an allocation failed: a MemoryError, torch's OutOfMemoryError, or a RuntimeError
    from torch or oneDNN that says so."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    return isinstance(exc, RuntimeError) and any(sign in str(exc).lower() for sign in _NO_MEMORY_IN_TORCH)


def os_error_line(exc: BaseException) -> str | None:
    """One line for an operating-system failure (naming the path and what to do), or None when
    ``exc`` is not one. The CLI shows it like a :class:`UserError`; the studio can too."""

    if out_of_memory(exc):
        return ("out of memory: close other programs, or use a shorter script, a smaller --batch "
                "or fewer --num-step")
    if isinstance(exc, (ImportError, OSError)) and any(sign in str(exc).lower() for sign in _NO_MEMORY_TO_LOAD):
        return (f"out of memory while loading a library ({first_line(exc)}): raise the memory limit "
                "(ulimit -v) or close other programs")
    if not isinstance(exc, OSError) or exc.errno is None:
        return None
    path = exc.filename if exc.filename is not None else None
    where = f" {path}" if path is not None else ""
    code = exc.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on the device for{where or ' the file being written'}: free some space or write elsewhere"
    if code == errno.EROFS:
        return f"{path or 'the target'} is on a read-only file system: write somewhere else"
    if code in (errno.EACCES, errno.EPERM):
        return f"permission denied:{where or ' a file or folder'}: check its owner and mode, or write elsewhere"
    if code == errno.ENOTDIR:
        return f"{path or 'a path'}: part of this path is a file where a folder should be (check OMNISTUDIO_HOME and -o)"
    if code == errno.EISDIR:
        return f"{path or 'a path'} is a directory where a file was expected"
    if code == errno.EEXIST:
        return f"{path or 'a path'} already exists and is in the way (a file where a folder should be?)"
    if code == errno.ENOENT:
        return f"{path or 'a file or folder'} does not exist"
    return f"{exc.strerror or type(exc).__name__}{':' + where if where else ''}"
