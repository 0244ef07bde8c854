"""The one error type that reaches the user as a single clear line."""


class UserError(Exception):
    """A problem with what the user asked for or supplied.

    The CLI and the studio show ``str(err)`` as one line, with no traceback.
    """


class Cancelled(Exception):
    """Raised inside a synthesis (at the next diffusion step) when its caller cancelled it."""
