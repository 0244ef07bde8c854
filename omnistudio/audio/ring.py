"""A single-producer/single-consumer float32 ring buffer.

One thread writes (``write``), one other thread reads (``read_into``,
``skip``). The producer owns the write counter, the consumer owns the read
counter; each side only reads the other's counter. Counters grow without
bound (Python ints) and are taken modulo the power-of-two capacity, so
"full" and "empty" are never confused. The producer copies the samples
first and publishes the new write counter after the copy, so the consumer
never sees a sample before it is written. No locks: under the GIL an int
attribute store is atomic, and the copies themselves are numpy ``copyto``
calls into preallocated storage (no sample arrays are allocated).
"""

from __future__ import annotations

import numpy as np


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class Ring:
    """A float32 SPSC ring holding up to ``capacity`` samples (rounded up to a power of two)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("ring capacity must be at least 1 sample")
        self.capacity = _next_pow2(capacity)
        self._mask = self.capacity - 1
        self._buf = np.zeros(self.capacity, dtype=np.float32)
        self._write = 0  # total samples ever written (producer-owned)
        self._read = 0  # total samples ever read (consumer-owned)

    # ------------------------------------------------------------- both sides
    @property
    def available(self) -> int:
        """Samples ready to read."""
        return self._write - self._read

    @property
    def space(self) -> int:
        """Samples that can be written without overwriting unread ones."""
        return self.capacity - (self._write - self._read)

    @property
    def total_written(self) -> int:
        return self._write

    @property
    def total_read(self) -> int:
        return self._read

    # --------------------------------------------------------------- producer
    def write(self, data: np.ndarray) -> int:
        """Copy as many samples of ``data`` as fit; return how many were written."""
        n = min(len(data), self.capacity - (self._write - self._read))
        if n <= 0:
            return 0
        start = self._write & self._mask
        first = min(n, self.capacity - start)
        np.copyto(self._buf[start:start + first], data[:first], casting="same_kind")
        if n > first:
            np.copyto(self._buf[:n - first], data[first:n], casting="same_kind")
        self._write += n  # publish after the copy
        return n

    # --------------------------------------------------------------- consumer
    def read_into(self, out: np.ndarray) -> int:
        """Fill the front of ``out`` with up to ``len(out)`` samples; return how many."""
        n = min(len(out), self._write - self._read)
        if n <= 0:
            return 0
        start = self._read & self._mask
        first = min(n, self.capacity - start)
        np.copyto(out[:first], self._buf[start:start + first])
        if n > first:
            np.copyto(out[first:n], self._buf[:n - first])
        self._read += n  # release the space after the copy
        return n

    def skip(self, n: int | None = None) -> int:
        """Drop up to ``n`` unread samples (all of them when ``n`` is None); return how many."""
        ready = self._write - self._read
        count = ready if n is None else max(0, min(int(n), ready))
        self._read += count
        return count

    def read_latest(self, out: np.ndarray) -> int:
        """Drop what is older than the newest ``len(out)`` samples, then read those (meters)."""
        excess = (self._write - self._read) - len(out)
        if excess > 0:
            self._read += excess
        return self.read_into(out)
