"""Waiting for a condition by polling. The timeout only bounds a hang; no test asserts on how long it took."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

# The one bound on a wait that should end (a server's answer, a thread's join, a condition met): long
# enough that only a hang reaches it on a slow, loaded CI machine (OMNISTUDIO_TEST_HANG_S overrides).
HANG_S = float(os.environ.get("OMNISTUDIO_TEST_HANG_S", "300"))


def wait_until(predicate: Callable[[], object], timeout: float = HANG_S, what: str = "condition",
               interval: float = 0.01) -> None:
    """Poll ``predicate`` until it is true; fail with ``what`` if it never is within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
