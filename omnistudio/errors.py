"""The one error type that reaches the user as a single clear line."""


class UserError(Exception):
    """A problem with what the user asked for or supplied.

    The CLI and the studio show ``str(err)`` as one line, with no traceback.
    """


class Unavailable(UserError):
    """The engine cannot be reached right now (a speech server down, restarting, busy, or the link to it
    lost); the same request may work later. Clients show it, keep everything, and try again."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, or its type name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def describe(exc: BaseException) -> str:
    """``Type: first line`` of an unexpected exception (``Type`` alone when it has no message)."""
    return f"{type(exc).__name__}: {first_line(exc)}" if str(exc).strip() else type(exc).__name__


class Cancelled(Exception):
    """Raised inside a synthesis (at the next diffusion step) when its caller cancelled it."""
