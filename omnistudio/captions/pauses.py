"""Pauses in a sentence's audio, and which words each stretch of speech between them holds.

A speech model's word times are poor exactly where captions and lip-sync notice it most: after a
pause, Whisper's word usually starts inside the silence before it (its words tile the time with no
gaps). The signal says where speech resumes. :func:`speech_islands` finds the stretches of speech
(frame loudness above :data:`FLOOR_DB` under the loudest frame, pauses shorter than
:data:`MIN_PAUSE_S` bridged, so a stop's closure does not split a word); :func:`assign_islands` gives
each word an island, in order, the one nearest its measured middle: the first word of an island then
starts where the island does."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

FLOOR_DB = -40.0  # a 10 ms frame this far under the loudest one is silence
MIN_PAUSE_S = 0.1  # a shorter quiet stretch is inside speech (a stop's closure), not a pause
FRAME_S = 0.010
HOP_S = 0.005
EMPTY_ISLAND_COST = 0.2  # seconds of misplacement worth leaving a stretch of sound without a word (a breath)


def speech_islands(pcm: np.ndarray, sample_rate: int) -> list[tuple[float, float]]:
    """The stretches of speech in mono ``pcm`` as (start, end) seconds from its start, in order."""
    audio = np.asarray(pcm, dtype=np.float64).reshape(-1)
    frame, hop = max(1, round(FRAME_S * sample_rate)), max(1, round(HOP_S * sample_rate))
    if audio.size < frame:
        return []
    starts = np.arange(0, audio.size - frame + 1, hop)
    energy = np.concatenate(([0.0], np.cumsum(audio ** 2)))
    power = (energy[starts + frame] - energy[starts]) / frame
    if not power.max() > 0:
        return []
    loud = power >= power.max() * 10 ** (FLOOR_DB / 10)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], loud.astype(np.int8), [0]))))
    out: list[tuple[float, float]] = []
    for first, past in zip(edges[::2], edges[1::2]):
        start, end = starts[first] / sample_rate, (starts[past - 1] + frame) / sample_rate
        if out and start - out[-1][1] < MIN_PAUSE_S:
            out[-1] = (out[-1][0], float(end))
        else:
            out.append((float(start), float(end)))
    return out


def assign_islands(middles: Sequence[float], islands: Sequence[tuple[float, float]],
                   weights: Sequence[float] | None = None) -> list[int]:
    """Each word's island (indices into ``islands``, never decreasing along the words), chosen to keep the
    words' middles (seconds) closest to their islands (the distance times the word's weight, default 1), an
    island no word takes costing :data:`EMPTY_ISLAND_COST`. Empty without islands."""
    n, m = len(middles), len(islands)
    if not m or not n:
        return []
    weight = [1.0] * n if weights is None else list(weights)

    def cost(i: int, j: int) -> float:
        x = middles[i]
        return weight[i] * max(islands[j][0] - x, 0.0, x - islands[j][1])

    # best[i][j]: the cost of words 0..i with word i in island j (islands passed over paid as empty)
    best = [[cost(0, j) + EMPTY_ISLAND_COST * j for j in range(m)]]
    back: list[list[int]] = [[0] * m]
    for i in range(1, n):
        row, came = [], []
        for j in range(m):
            k = min(range(j + 1), key=lambda k: best[-1][k] + EMPTY_ISLAND_COST * max(0, j - k - 1))
            row.append(best[-1][k] + EMPTY_ISLAND_COST * max(0, j - k - 1) + cost(i, j))
            came.append(k)
        best.append(row)
        back.append(came)
    j = min(range(m), key=lambda j: best[-1][j] + EMPTY_ISLAND_COST * (m - 1 - j))
    out = [0] * n
    for i in range(n - 1, -1, -1):
        out[i] = j
        j = back[i][j]
    return out
