"""``omnistudio bench --meter``: the cost of the studio's live loudness meter per 100 ms block."""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omnistudio.bench.modes import Modes, OpenEngine

DEFAULT_SENTENCES = 1
SUMMARY = ("live loudness meter at {sample_rate} Hz: {per_block_ms:.4f} ms per {block_ms:.0f} ms block "
           "(momentary, short-term, integrated, sample peak), {per_block_ms_with_true_peak:.4f} ms with true "
           "peak; a whole {whole_signal_s:.0f} s signal in {whole_signal_ms:.1f} ms")


def add_flags(parser: argparse.ArgumentParser, modes: Modes) -> None:
    modes.add_argument("--meter", action="store_true", help="cost of the live loudness meter per 100 ms block")


def meter_benchmark(seconds: float = 60.0, sample_rate: int = 24_000, block_s: float | None = None) -> dict[str, object]:
    """Time the live meter: feed ``seconds`` of noise in ``block_s`` blocks (default: the meter's 100 ms) and read
    M, S and true peak after each block (what the studio does); return the cost per block (`omnistudio bench
    --meter` prints it)."""
    # lazy: start-up (numpy, pyebur128)
    import numpy as np

    # lazy: start-up (numpy, pyebur128)
    from omnistudio.audio.loudness import BLOCK_S, LoudnessMeter, measure

    block_s = BLOCK_S if block_s is None else block_s
    rng = np.random.default_rng(0)
    pcm = (0.1 * rng.standard_normal(int(seconds * sample_rate))).astype(np.float32)
    step = int(round(block_s * sample_rate))
    result: dict[str, object] = {"sample_rate": sample_rate, "block_ms": block_s * 1000.0}
    blocks = 0
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


def run(args: argparse.Namespace, open_engine: OpenEngine) -> dict[str, object]:
    return meter_benchmark()


def print_result(result: Mapping[str, object]) -> None:
    print(SUMMARY.format(**result))
