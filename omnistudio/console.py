"""Progress and messages on stderr for the CLI (stdout is kept for results and JSON)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

err_console = Console(stderr=True)


def setup_logging(verbose: bool = False) -> None:
    from rich.logging import RichHandler

    handler = RichHandler(console=err_console, show_time=False, show_path=False, markup=False)
    logging.basicConfig(level=logging.WARNING, handlers=[handler], format="%(message)s", force=True)
    logging.getLogger("omnistudio").setLevel(logging.DEBUG if verbose else logging.INFO)
    for noisy in ("transformers", "huggingface_hub", "omnivoice"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


@contextmanager
def status(message: str) -> Iterator[callable]:  # type: ignore[valid-type]
    """A spinner on stderr; yields a function that updates its text."""
    with err_console.status(message) as live:
        yield lambda text: live.update(text)
