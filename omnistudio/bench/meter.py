"""``omnistudio bench --meter``: the cost of the studio's live loudness meter per 100 ms block."""

from __future__ import annotations

import time

import numpy as np

from omnistudio.audio.loudness import BLOCK_S, LoudnessMeter, measure


def meter_benchmark(seconds: float = 60.0, sample_rate: int = 24_000, block_s: float = BLOCK_S) -> dict[str, float]:
    """Time the live meter: feed ``seconds`` of noise in ``block_s`` blocks and read M, S and true
    peak after each block (what the studio does); return the cost per block (`omnistudio bench --meter`
    prints it)."""
    rng = np.random.default_rng(0)
    pcm = (0.1 * rng.standard_normal(int(seconds * sample_rate))).astype(np.float32)
    step = int(round(block_s * sample_rate))
    result: dict[str, float] = {"sample_rate": sample_rate, "block_ms": block_s * 1000.0}
    for label, true_peak in (("per_block_ms", False), ("per_block_ms_with_true_peak", True)):
        meter = LoudnessMeter(sample_rate, true_peak=true_peak)
        blocks = 0
        t0 = time.perf_counter()
        for start in range(0, pcm.size, step):
            meter.add(pcm[start:start + step])
            meter.momentary(), meter.short_term(), meter.true_peak()
            blocks += 1
        result[label] = round((time.perf_counter() - t0) * 1000.0 / blocks, 4)
    t1 = time.perf_counter()
    measure(pcm, sample_rate)
    result.update(blocks=blocks, whole_signal_s=seconds,
                  whole_signal_ms=round((time.perf_counter() - t1) * 1000.0, 2))
    return result
