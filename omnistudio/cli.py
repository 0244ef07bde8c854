"""`omnistudio` entry point: parses arguments and dispatches to a command module.

Each subcommand lives in ``omnistudio/commands/<name>.py`` with ``add_parser``
and ``run``; the flags they share are defined once in ``omnistudio/commands/flags/``.
With no subcommand the studio opens. Every user error ends as one line on stderr and
a non-zero exit, never a traceback.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing before the handlers are in
if TYPE_CHECKING:
    import signal as _signal  # the stubs describe `signal`, whose C half `_signal` is
    from types import ModuleType
else:
    import _signal  # the C half of `signal`: installing through it costs nothing to import (signal imports enum)


def _leave_now(signum: int, _frame: object) -> None:
    """Until a command starts nothing is open or half-written: one line, and leave at once."""
    try:
        os.write(2, b"omnistudio: terminated\n" if signum == _signal.SIGTERM else b"omnistudio: interrupted\n")
    finally:
        os._exit(128 + signum)


# First: a Ctrl-C or SIGTERM while the program imports is one line, not a traceback.
_signal.signal(_signal.SIGINT, _leave_now)
_signal.signal(_signal.SIGTERM, _leave_now)

import argparse
import importlib
import sys

from omnistudio import __version__, signals
from omnistudio.commands.flags.parser import EXIT_USER_ERROR, OneLineParser
from omnistudio.errors import Terminated, UserError, os_error_line
import difflib

COMMANDS = ["say", "render", "captions", "check", "voices", "prevectorize", "analyze", "lexicon", "normalize",
            "bench", "serve", "mcp", "mos", "studio"]
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only``, that command's options alone (what one run parses: the
    other commands' options import what they check against, e.g. render's finishing flags import the
    DSP and with it scipy and torch, seconds that ``omnistudio voices list`` need not pay)."""
    parser = OneLineParser(prog="omnistudio", description="Voice-cloning studio for a news desk's anchors.")
    parser.add_argument("--version", action="version", version=f"omnistudio {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="more log output on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name in COMMANDS if only is None else [only]:
        module = _command_module(name)
        if module is not None:
            module.add_parser(sub)
    return parser


def _command_module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"omnistudio.commands.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"omnistudio.commands.{name}":
            return None
        raise


def with_default_command(argv: list[str]) -> list[str]:
    """``omnistudio [--model M ...]`` means ``omnistudio studio [--model M ...]``."""
    top = 0
    while top < len(argv) and argv[top] in ("-v", "--verbose"):
        top += 1
    rest = argv[top:]
    if rest and (rest[0] in COMMANDS or rest[0] in ("-h", "--help", "--version")):
        return argv
    if rest and not rest[0].startswith("-"):  # the studio takes options only: a word first is a command
        near = difflib.get_close_matches(rest[0], COMMANDS, n=1)
        hint = f"did you mean '{near[0]}'?" if near else f"the commands are {', '.join(COMMANDS)}"
        raise UserError(f"unknown command '{rest[0]}': {hint}")
    if _command_module("studio") is None:
        return argv
    return [*argv[:top], "studio", *rest]


def _say(line: str) -> None:
    """One line on stderr (plain write: Rich may not be imported yet when a signal comes early)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _quiet_stdout() -> None:
    """After a broken pipe (``omnistudio analyze F | head -1``): no further writes, no shutdown noise."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run one command; every ending is one line and an exit status (130 Ctrl-C, 143 SIGTERM).

    Without ``argv`` this is the process's own command line (the ``omnistudio`` script, ``python -m``):
    then the ending also holds until the process is gone (:func:`omnistudio.signals.settle`)."""
    own = argv is None
    if own:
        signals.own_exit()
    try:
        code, line = _main(argv), None
        _ended(own)  # inside the try: a signal that comes before this is the command's interruption
    except Terminated:
        code, line = EXIT_TERMINATED, "omnistudio: terminated"
    except KeyboardInterrupt:
        code, line = EXIT_INTERRUPTED, "omnistudio: interrupted"
    except BrokenPipeError:
        _quiet_stdout()
        code, line = 0, None
    _ended(own)
    return _end(own, code, line)


def _ended(own: bool) -> None:
    """From here a signal is the ending's (kept until :func:`omnistudio.signals.settle` leaves with the
    status), not an exception raised outside ``main``'s ``try``. Only for the process's own command: an
    in-process call leaves the caller's Ctrl-C alone."""
    if own:
        signals.ending()


def _end(own: bool, code: int, line: str | None = None) -> int:
    """The exit status, after the ending's line; a signal from here on no longer interrupts anything."""
    if own:
        signals.settle(code, line)
    elif line is not None:
        _say(line)
    return code


def _main(argv: list[str] | None) -> int:
    try:
        return _command(argv)
    except UserError as exc:
        _say(f"omnistudio: error: {exc}")
        return EXIT_USER_ERROR
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except SystemExit as exc:
        if isinstance(exc.__context__, BrokenPipeError):  # Rich's console ends a closed stdout with exit 1
            raise exc.__context__ from None
        raise
    except (Exception, MemoryError) as exc:  # from the parser's imports on too: low memory can strike there
        interrupted = signals.interruption()  # a Ctrl-C that a library turned into its own error
        if interrupted is not None:
            raise interrupted from None
        line = os_error_line(exc)  # no space, read-only, permission, not a folder, out of memory...
        if line is not None and not os.environ.get("OMNISTUDIO_DEBUG"):
            _say(f"omnistudio: error: {line}")
            return EXIT_USER_ERROR
        # anything else is a bug, not a user error: still one line unless asked
        if os.environ.get("OMNISTUDIO_DEBUG"):
            raise
        _say(f"omnistudio: internal error: {type(exc).__name__}: {exc} (set OMNISTUDIO_DEBUG=1 for the traceback)")
        return 1


def _named_command(argv: list[str]) -> str | None:
    """The command ``argv`` runs (after :func:`with_default_command`), or None (``--help``, ``--version``)."""
    rest = [arg for arg in argv if arg not in ("-v", "--verbose")]
    return rest[0] if rest and rest[0] in COMMANDS else None


def _command(argv: list[str] | None) -> int:
    words = with_default_command(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser(_named_command(words))
    args = parser.parse_args(words)
    # lazy: start-up (rich)
    from omnistudio.console import setup_logging

    setup_logging(args.verbose)
    command = args.command
    if command is None:
        parser.print_help()
        return 0
    # Until here a signal exits at once (nothing is open); from now on it is an exception, so the
    # command's finally blocks remove its temp files before the one line and the exit status.
    signals.install()
    module = _command_module(command)
    assert module is not None  # the parser offered only the commands whose module is there
    return int(module.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
