"""Playback bookkeeping for the studio: which sentence is being heard, and a virtual output.

The player's ring counts every frame the output callback took (``ring.total_read``); the
schedule maps those frame counts back to sentence indices, so the UI can highlight the sentence
being heard by pulling, not by being pushed.

``VirtualOutput`` stands in for a sound card when there is none (or in tests): a thread calls
the player's output callback at the pace of a real device (``rate`` times real time), so the
tap ring, meter and highlight behave as they do with a device, silently.
"""

from __future__ import annotations

import bisect
import threading
import time

import numpy as np

from omnistudio.audio.player import Player

BLOCK_S = 0.02


class Schedule:
    """Sentence spans in the player's frame count (written by the engine thread, read by the UI)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._index: list[int] = []

    def add(self, start: int, end: int, sentence: int) -> None:
        # appends happen in order; a reader copying a list under the GIL sees a consistent prefix
        self._ends.append(end)
        self._index.append(sentence)
        self._starts.append(start)

    def clear(self) -> None:
        self._starts, self._ends, self._index = [], [], []

    def at(self, frame: int) -> int | None:
        starts, ends, index = self._starts, self._ends, self._index
        k = bisect.bisect_right(starts, frame) - 1
        if 0 <= k < len(ends) and frame < ends[k]:
            return index[k]
        return None

    @property
    def end(self) -> int:
        return self._ends[-1] if self._ends else 0


class VirtualOutput:
    """Drives ``player``'s callback from a thread, like a device with no sound."""

    def __init__(self, player: Player, rate: float = 1.0, block_s: float = BLOCK_S) -> None:
        self.player = player
        self.rate = rate
        self.frames = max(1, int(player.sample_rate * block_s))
        self._buf = np.zeros((self.frames, 1), dtype=np.float32)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="studio-virtual-output", daemon=True)

    def start(self) -> VirtualOutput:
        self._thread.start()
        return self

    def _run(self) -> None:
        period = self.frames / self.player.sample_rate / self.rate
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.player._callback(self._buf, self.frames, None, None)  # noqa: SLF001 - the device's role
            next_at += period
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                next_at = time.monotonic()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)
