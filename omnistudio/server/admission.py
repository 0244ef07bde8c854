"""How many requests a server takes at once (``--max-queue``): :class:`Admission`, and :class:`Busy`
past it (a 429 with Retry-After). A leaf of its own, so that ``serve`` checks its options without
importing the take pipeline."""

from __future__ import annotations

import threading

from omnistudio.errors import UserError


class Busy(Exception):
    """The queue is full: come back later."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"the server is busy; retry after {retry_after_s} s")
        self.retry_after_s = retry_after_s


class Admission:
    """At most ``max_queue`` requests in flight; past that, :class:`Busy` at once."""

    def __init__(self, max_queue: int) -> None:
        if not 1 <= int(max_queue) <= 10_000:
            raise UserError(f"--max-queue {max_queue} is out of range 1..10000")
        self.max_queue = int(max_queue)
        self.active = 0
        self._lock = threading.Lock()

    def enter(self) -> None:
        with self._lock:
            if self.active >= self.max_queue:
                raise Busy(retry_after_s=max(1, self.active // 4))
            self.active += 1

    def leave(self) -> None:
        with self._lock:
            self.active = max(0, self.active - 1)
