"""``omnistudio bench --dialogue``: batched vs sequential dialogue, the same lines, voices and seeds,
interleaved in one run."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from omnistudio.bench.corpus import DIALOGUE, reference_prompt, take
from omnistudio.errors import UserError

if TYPE_CHECKING:
    import numpy as np

    from omnistudio.bench.modes import Modes, OpenEngine
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.reference import Reference
    from omnistudio.engine.upstream import VoicePrompt

DEFAULT_SENTENCES = 8
SUMMARY = ("{lines} lines: sequential {sequential_s:.2f} s, batched (x{batch}) {batched_s:.2f} s -> "
           "throughput ratio {throughput_ratio:.2f}x (max |diff| {max_abs_diff:.3g})")


def add_flags(parser: argparse.ArgumentParser, modes: Modes) -> None:
    modes.add_argument("--dialogue", action="store_true", help="batched vs sequential dialogue throughput "
                       "(default 8 lines)")
    parser.add_argument("--batch", type=int, default=2, help="dialogue batch size (default 2)")


def dialogue_benchmark(engine: Engine, voices: Sequence[Reference | VoicePrompt], batch: int = 2, lines: int = 8,
                       repeats: int = 2, num_step: int = 10, seed: int = 0) -> dict[str, object]:
    """Render ``lines`` dialogue lines (alternating ``voices``) one at a time and ``batch`` at a time.

    Rounds alternate sequential / batched so both see the same machine state;
    the figure is audio seconds per wall second, median over ``repeats``. The
    batched items are checked sample for sample against the sequential ones.
    """
    if batch < 2:
        raise UserError("the dialogue benchmark needs --batch of at least 2")
    if not hasattr(engine.sampler, "generators"):
        raise UserError("batched dialogue needs the fast sampler (per-item seeds)")
    # lazy: start-up (numpy)
    import numpy as np

    texts = take(DIALOGUE, lines)
    who = [voices[i % len(voices)] for i in range(lines)]
    seeds = [seed + i for i in range(lines)]
    langs = ["en"] * lines
    timing: dict[str, list[float]] = {"sequential": [], "batched": []}
    outputs: dict[str, list[np.ndarray]] = {}
    for _ in range(repeats):
        t0 = time.perf_counter()
        outputs["sequential"] = [engine.synthesize(t, v, seed=s, num_step=num_step).pcm
                                 for t, v, s in zip(texts, who, seeds)]
        timing["sequential"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        batched: list[np.ndarray] = []
        for i in range(0, lines, batch):
            part = slice(i, i + batch)
            batched += [r.pcm for r in engine.synthesize_batch(texts[part], who[part], langs[part],
                                                               num_step=num_step, seeds=seeds[part])]
        outputs["batched"] = batched
        timing["batched"].append(time.perf_counter() - t0)
    audio_s = sum(len(p) for p in outputs["sequential"]) / engine.sample_rate
    seq_s, bat_s = statistics.median(timing["sequential"]), statistics.median(timing["batched"])
    diff = max(float(np.abs(a - b).max()) if len(a) == len(b) else float("inf")
               for a, b in zip(outputs["sequential"], outputs["batched"]))
    return {"model": engine.loaded.spec.name, "device": engine.loaded.device, "lines": lines, "batch": batch,
            "num_step": num_step, "repeats": repeats, "audio_s": round(audio_s, 3),
            "sequential_s": round(seq_s, 4), "batched_s": round(bat_s, 4),
            "sequential_audio_per_s": round(audio_s / seq_s, 3), "batched_audio_per_s": round(audio_s / bat_s, 3),
            "throughput_ratio": round(seq_s / bat_s, 3), "max_abs_diff": diff}


def run(args: argparse.Namespace, open_engine: OpenEngine) -> dict[str, object]:
    engine = open_engine(args, "fast")
    voices = [reference_prompt(engine, 3.0), reference_prompt(engine, 4.0)]
    args.progress(0, 1, f"dialogue: {args.sentences} lines, sequential vs batches of {args.batch}")
    return dialogue_benchmark(engine, voices, batch=args.batch, lines=args.sentences, num_step=args.num_step,
                              seed=args.seed)


def print_result(result: Mapping[str, object]) -> None:
    print(f"{result['model']} on {result['device']}: " + SUMMARY.format(**result))
