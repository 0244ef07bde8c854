"""Prompt cache figures: load every ready prompt from disk, then (anchor, lang) lookups, then warm-up.

    OMNISTUDIO_HOME=/tmp/h python bench/prompt_cache.py --model tiny [--build]

Builds nothing unless ``--build`` (then missing prompts are made first, as
``omnistudio prevectorize`` would). Prints one JSON object; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import timeit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--device", default=None)
    parser.add_argument("--repeat", type=int, default=5, help="times to load the whole cache")
    parser.add_argument("--build", action="store_true", help="build missing prompts first")
    args = parser.parse_args()

    import torch

    from omnistudio.engine.engine import Engine
    from omnistudio.voices.prompts import PromptCache, cache_for, ensure_prompt
    from omnistudio.voices.startup import warm_up
    from omnistudio.voices.roster import load_roster

    torch.set_num_threads(1)
    engine = Engine.load(args.model, device=args.device)
    roster = load_roster()
    built_s = None
    if args.build:
        started = time.perf_counter()
        for anchor_id, lang in roster.pairs():
            ensure_prompt(engine, roster, anchor_id, lang)
        built_s = time.perf_counter() - started

    loads = []
    for _ in range(args.repeat):
        cache = PromptCache()
        report = cache.load_all(roster, engine.loaded.fingerprint, engine.loaded.device)
        loads.append(report.seconds)
    keys = cache.keys()
    if not keys:
        raise SystemExit("no ready prompts: run `omnistudio prevectorize` first, or pass --build")
    n = 200_000
    lookup_s = min(timeit.repeat(lambda: cache.get("ruby", "en"), number=n, repeat=5)) / n
    engine_cache = cache_for(engine)
    for key in keys:
        engine_cache.put(cache.get(*key))  # type: ignore[arg-type]
    warm = warm_up(engine)
    print(json.dumps({
        "model": args.model, "device": engine.loaded.device, "torch_threads": torch.get_num_threads(),
        "prompts_loaded": report.loaded, "not_ready": len(report.not_ready), "errors": len(report.errors),
        "load_all_s_min": min(loads), "load_all_s_median": statistics.median(loads),
        "lookup_us": lookup_s * 1e6, "warm_up_single_s": warm["single_s"], "warm_up_batch3_s": warm["batch3_s"],
        "build_missing_s": built_s,
    }, indent=2))


if __name__ == "__main__":
    main()
