"""Waiting for a condition by polling. The timeout only bounds a hang; no test asserts on how long it took."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(predicate: Callable[[], object], timeout: float = 120.0, what: str = "condition",
               interval: float = 0.01) -> None:
    """Poll ``predicate`` until it is true; fail with ``what`` if it never is within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
