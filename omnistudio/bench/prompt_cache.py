"""Prompt cache figures: load every ready prompt from disk, then (anchor, lang) lookups, then warm-up.

    OMNISTUDIO_HOME=/tmp/h python -m omnistudio.bench.prompt_cache --model tiny [--build]

Builds nothing unless ``--build`` (then missing prompts are made first, as
``omnistudio prevectorize`` would). Prints one JSON object (with its ``provenance``: commit, machine,
load); nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import timeit

from omnistudio.bench.provenance import provenance
from omnistudio.flags.engine import add_model_options
from omnistudio.voices.roster import load_roster


def run(model: str = "tiny", device: str | None = None, dtype: str | None = None, repeat: int = 5,
        build: bool = False) -> dict[str, object]:
    # lazy: start-up (numpy, torch)
    import torch

    # lazy: start-up (numpy)
    from omnistudio.engine.engine import Engine
    from omnistudio.voices.prompts import LoadReport, PromptCache, cache_for, ensure_prompt
    from omnistudio.voices.startup import warm_up

    torch.set_num_threads(1)
    engine = Engine.load(model, device=device, dtype=dtype)
    roster = load_roster()
    built_s = None
    if build:
        started = time.perf_counter()
        for anchor_id, lang in roster.pairs():
            ensure_prompt(engine, roster, anchor_id, lang)
        built_s = time.perf_counter() - started

    loads = []
    cache: PromptCache | None = None
    report: LoadReport | None = None
    for _ in range(repeat):
        cache = PromptCache()
        report = cache.load_all(roster, engine.loaded.fingerprint, engine.loaded.device)
        loads.append(report.seconds)
    if cache is None or report is None:
        raise SystemExit("--repeat must be at least 1")
    keys = cache.keys()
    if not keys:
        raise SystemExit("no ready prompts: run `omnistudio prevectorize` first, or pass --build")
    n = 200_000
    lookup_s = min(timeit.repeat(lambda: cache.get("ruby", "en"), number=n, repeat=5)) / n
    engine_cache = cache_for(engine)
    for key in keys:
        prompt = cache.get(*key)
        if prompt is not None:
            engine_cache.put(prompt)
    warm = warm_up(engine)
    return {"model": model, "device": engine.loaded.device, "torch_threads": torch.get_num_threads(),
            "prompts_loaded": report.loaded, "not_ready": len(report.not_ready), "errors": len(report.errors),
            "load_all_s_min": min(loads), "load_all_s_median": statistics.median(loads),
            "lookup_us": lookup_s * 1e6, "warm_up_single_s": warm["single_s"], "warm_up_batch3_s": warm["batch3_s"],
            "build_missing_s": built_s}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnistudio.bench.prompt_cache",
                                     description=(__doc__ or "").splitlines()[0])
    add_model_options(parser)
    parser.set_defaults(model="tiny")
    parser.add_argument("--repeat", type=int, default=5, help="times to load the whole cache")
    parser.add_argument("--build", action="store_true", help="build missing prompts first")
    args = parser.parse_args(argv)
    result = run(args.model, args.device, args.dtype, args.repeat, args.build)
    print(json.dumps({**result, "provenance": provenance()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
