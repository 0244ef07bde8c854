"""The SPSC ring buffer: capacity, partial writes/reads, and order across wrap-arounds under threads."""

from __future__ import annotations

import threading
import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from omnistudio.audio.ring import Ring
from support.wait import HANG_S


def test_capacity_rounds_up_and_partial_ops() -> None:
    ring = Ring(100)
    assert ring.capacity == 128
    assert ring.write(np.arange(200, dtype=np.float32)) == 128  # only what fits
    assert ring.space == 0 and ring.available == 128
    out = np.zeros(50, dtype=np.float32)
    assert ring.read_into(out) == 50
    assert np.array_equal(out, np.arange(50))
    assert ring.write(np.arange(200, 230, dtype=np.float32)) == 30  # wraps around the end
    rest = np.zeros(200, dtype=np.float32)
    n = ring.read_into(rest)
    assert n == 108
    assert np.array_equal(rest[:n], np.concatenate([np.arange(50, 128), np.arange(200, 230)]))
    assert ring.read_into(rest) == 0


def test_skip_and_read_latest() -> None:
    ring = Ring(16)
    ring.write(np.arange(10, dtype=np.float32))
    assert ring.skip(3) == 3
    out = np.zeros(4, dtype=np.float32)
    assert ring.read_latest(out) == 4
    assert np.array_equal(out, [6, 7, 8, 9])
    ring.write(np.ones(5, dtype=np.float32))
    assert ring.skip() == 5 and ring.available == 0


@settings(max_examples=40, deadline=None)
@given(
    capacity=st.integers(min_value=1, max_value=256),
    total=st.integers(min_value=0, max_value=3000),
    write_sizes=st.lists(st.integers(min_value=1, max_value=97), min_size=1, max_size=20),
    read_sizes=st.lists(st.integers(min_value=1, max_value=97), min_size=1, max_size=20),
)
def test_every_sample_in_order_across_threads(capacity: int, total: int, write_sizes: list[int],
                                               read_sizes: list[int]) -> None:
    """A producer and a consumer thread with random chunk sizes: the consumer sees 0, 1, 2, ... exactly."""
    ring = Ring(capacity)
    source = np.arange(total, dtype=np.float32)
    received = np.full(total, -1.0, dtype=np.float32)
    failed: list[str] = []

    def produce() -> None:
        pos, i = 0, 0
        while pos < total:
            size = write_sizes[i % len(write_sizes)]
            i += 1
            n = ring.write(source[pos:pos + size])
            pos += n
            if n == 0:
                time.sleep(0)  # let the consumer run

    def consume() -> None:
        pos, i = 0, 0
        buf = np.zeros(max(read_sizes), dtype=np.float32)
        while pos < total:
            size = read_sizes[i % len(read_sizes)]
            i += 1
            n = ring.read_into(buf[:size])
            if n > size or pos + n > total:
                failed.append(f"read {n} samples at {pos}")
                return
            received[pos:pos + n] = buf[:n]
            pos += n
            if n == 0:
                time.sleep(0)  # let the producer run

    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=HANG_S)
    assert not any(t.is_alive() for t in threads), "producer or consumer stuck"
    assert not failed
    assert np.array_equal(received, source)
    assert ring.total_written == ring.total_read == total
