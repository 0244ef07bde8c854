"""Progress and messages on stderr for the CLI (stdout is kept for results and JSON)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import Progress

if TYPE_CHECKING:
    from rich.progress import ProgressColumn

err_console = Console(stderr=True)


def progress_bar(*columns: str | ProgressColumn, console: Console | None = None, **kwargs: Any) -> Progress:
    """A Rich progress bar on stderr, drawn only on a terminal: where stderr is a file or a pipe it draws
    nothing and ends without the empty line Rich's ``Progress.stop`` prints there, so a command's stderr
    holds only its own lines."""

    shown = console or err_console
    return Progress(*columns, console=shown, disable=not shown.is_terminal, **kwargs)


def setup_logging(verbose: bool = False) -> None:
    handler = RichHandler(console=err_console, show_time=False, show_path=False, markup=False)
    logging.basicConfig(level=logging.WARNING, handlers=[handler], format="%(message)s", force=True)
    logging.getLogger("omnistudio").setLevel(logging.DEBUG if verbose else logging.INFO)
    for noisy in ("transformers", "huggingface_hub", "omnivoice"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


@contextmanager
def status(message: str) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr; yields a function that updates its text."""
    with err_console.status(message) as live:
        yield lambda text: live.update(text)
