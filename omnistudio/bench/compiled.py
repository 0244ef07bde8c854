"""``omnistudio bench --lengths``: sentences of distinct lengths through the compiled backbone and vocoder, after warm-up.

``torch.compile`` pays off only if a novel sentence length does not compile again:
after a warm-up of two sentences, every sentence of the sweep has a length not seen
before. Dynamo's graph count before and after gives the recompilations; each
sentence's tokens are decoded once untimed (the first vocoder run after a
diffusion pass pays for cold memory, whichever path it takes), then by the
compiled vocoder and by the eager one in alternating order, so the per-sentence
vocoder times compare directly and the samples are checked against eager's.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from contextlib import nullcontext
from typing import TYPE_CHECKING

from omnistudio.bench.corpus import NEWS, SWEEP_WORDS, reference_prompt
from omnistudio.bench.speed import compile_modes

if TYPE_CHECKING:
    from omnistudio.bench.modes import Modes, OpenEngine, Progress
    from omnistudio.engine.engine import Engine, Synthesis

DEFAULT_SENTENCES = 20
SUMMARY = ("{sentences} sentences of distinct lengths, compiled ({compile_mode}) after warm-up: {recompiles} "
           "recompilations; vocoder compiled / eager (median of the last 10) = {vocoder_ratio_last10:.2f}")


def add_flags(parser: argparse.ArgumentParser, modes: Modes) -> None:
    modes.add_argument("--lengths", action="store_true", help="sentences of distinct lengths through the compiled "
                       "backbone and vocoder after warm-up: recompilations, vocoder time vs eager (default 20)")


def sweep_texts(n: int) -> list[str]:
    """``n`` sentences of strictly increasing length (3, 5, 7, ... words)."""
    return [" ".join(SWEEP_WORDS[j % len(SWEEP_WORDS)] for j in range(3 + 2 * i)).capitalize() + "." for i in range(n)]


def length_sweep(engine: Engine, sentences: int = 20, mode: str = "default", num_step: int = 10, seed: int = 0,
                 progress: Progress | None = None) -> dict[str, object]:
    # lazy: start-up (numpy, torch)
    import numpy as np
    import torch

    # lazy: start-up (torch)
    from omnistudio.engine.compile import apply_compile, dynamo_graphs, eager

    say = progress or (lambda *_: None)
    model = engine.model
    prompt = reference_prompt(engine)
    say(0, sentences, "compiling and warming up")
    graphs_start = dynamo_graphs()
    status = apply_compile(model, backbone=True, vocoder=mode)
    for text in ("Warm up.", NEWS[0]):
        engine.synthesize(text, prompt, num_step=num_step, seed=seed)
    graphs_warm = dynamo_graphs()
    rows: list[dict[str, float]] = []
    for i, text in enumerate(sweep_texts(sentences)):
        say(i, sentences, f"sentence {i + 1}/{sentences}")
        pending = engine.render_tokens([text], [prompt], ["en"], num_step=num_step, seeds=[seed])
        decoded: dict[str, Synthesis] = {}
        with eager(model):  # untimed: the first vocoder run after a diffusion pass is several times slower
            engine.decode(pending)  # (cold memory) whichever path it takes; measured 3-5x on tiny
        for kind in (("compiled", "eager") if i % 2 == 0 else ("eager", "compiled")):
            with eager(model) if kind == "eager" else nullcontext():
                decoded[kind] = engine.decode(pending)[0]
        pcm_c, pcm_e = decoded["compiled"].pcm, decoded["eager"].pcm
        rows.append({"frames": int(engine.estimate_target_frames(text, prompt)),
                     "audio_s": round(len(pcm_c) / engine.sample_rate, 3),
                     "tokens_s": round(pending.tokens_s, 4),
                     "vocoder_compiled_ms": round(1000 * decoded["compiled"].timings.decode_s, 2),
                     "vocoder_eager_ms": round(1000 * decoded["eager"].timings.decode_s, 2),
                     "max_abs_diff": float(np.max(np.abs(pcm_c - pcm_e))) if len(pcm_c) == len(pcm_e) else float("inf")})
    say(sentences, sentences, "done")
    last = rows[-10:]
    ratio = float(np.median([r["vocoder_compiled_ms"] / r["vocoder_eager_ms"] for r in last]))
    return {"model": engine.loaded.spec.name, "device": str(engine.loaded.device), "dtype": engine.loaded.dtype_name,
            "torch_threads": torch.get_num_threads(), "compile_mode": mode, "compile": status,
            "num_step": num_step, "sentences": sentences, "warmup_graphs": graphs_warm - graphs_start,
            "recompiles": dynamo_graphs() - graphs_warm, "vocoder_ratio_last10": ratio,
            "max_abs_diff": max(r["max_abs_diff"] for r in rows), "rows": rows}


def run(args: argparse.Namespace, open_engine: OpenEngine) -> dict[str, object]:
    mode = (compile_modes(args.compile) or ["default"])[0]
    engine = open_engine(args, "fast")
    return length_sweep(engine, sentences=args.sentences, mode=mode,
                        num_step=args.num_step, seed=args.seed, progress=args.progress)


def print_result(result: Mapping[str, object]) -> None:
    print(f"{result['model']} on {result['device']}: " + SUMMARY.format(**result))
