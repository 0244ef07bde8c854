"""The static step at a never-seen length: its worst step against the median of warm steps (issue 47).

Warms the engine up as ``serve`` and the studio do (every batch-1 step graph captured up to the longest
row, each replayed once), renders a few short sentences, then one sentence whose row length no sentence
has had yet: the goal is a worst step no more than twice the warm median (no first-use cost per length:
no capture, no new kernels, no allocator growth on the audio path), the new length's worst step against
its own median (its row is longer than the warm ones). Each step is timed from one backbone
call to the next with the device synchronised (the pre-hook the runner calls before each replay). Also
reports which kernels the step ran (``exact``, ``liger``, or ``module``: the backbone's own forward), the
step graphs (a failed capture makes this bench exit 1) and the op count is on the CPU test
(tests/test_step_backbone.py).

    python -m omnistudio.bench.probe --model full --device cuda   # bench/gpu.sh's "probe" step
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from typing import Any

from omnistudio.bench.corpus import reference_prompt
from omnistudio.bench.modes import graph_failures
from omnistudio.bench.provenance import provenance
from omnistudio.flags.engine import add_model_options

WARM = ["Good evening.", "Markets closed higher.", "Traffic is heavy on the ring road."]
NEW = ("In sport, the home side won their third match in a row after a late goal, and the coach said the "
       "team had never played better in all the years he had been in charge of it.")


def run(model: str, device: str | None = None, dtype: str | None = None, num_step: int = 10) -> dict[str, Any]:
    # lazy: start-up (numpy, omnivoice, torch)
    import torch
    from omnivoice.models.omnivoice import OmniVoiceGenerationConfig

    # lazy: start-up (numpy, torch)
    from omnistudio.engine.engine import LONGEST_ROW, Engine
    from omnistudio.engine.sampler import FastSampler, SamplerOptions

    engine = Engine.load(model, device=device, dtype=dtype)
    dev = str(engine.model.device)
    cuda = dev.startswith("cuda")
    options = replace(SamplerOptions.for_device(dev), static_step=True, length_bucketing=True, block_attention=False)
    sampler = FastSampler(engine.model, options)
    prompt = reference_prompt(engine)
    gen_config = OmniVoiceGenerationConfig.from_dict(engine.generation_kwargs(num_step, 2.0))
    status = sampler.prepare_graphs(gen_config, (1,), LONGEST_ROW)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def steps_of(text: str) -> tuple[list[float], int]:
        marks: list[float] = []

        def mark(*_: object) -> None:
            sync()
            marks.append(time.perf_counter())

        hook = engine.model.llm.register_forward_pre_hook(mark)
        try:
            engine.render_tokens([text], [prompt], ["en"], num_step=num_step, seeds=[1], sampler=sampler)
            sync()
            end = time.perf_counter()
        finally:
            hook.remove()
        return [b - a for a, b in zip(marks, [*marks[1:], end])], sampler.last_stats.length

    warm: list[float] = []
    seen: set[int] = set()
    for text in WARM:
        times, length = steps_of(text)
        warm += times
        seen.add(length)
    probe, length = steps_of(NEW)
    median, probe_median = statistics.median(warm), statistics.median(probe)
    status = sampler.graph_status
    return {
        "model": engine.loaded.spec.name, "device": dev, "dtype": engine.loaded.dtype_name, "num_step": num_step,
        "kernels": sampler.runner.kernels, "seen_lengths": sorted(seen), "probe_length": length,
        "never_seen": length not in seen, "warm_median_ms": round(median * 1e3, 3),
        "probe_median_ms": round(probe_median * 1e3, 3), "probe_worst_ms": round(max(probe) * 1e3, 3),
        # the goal (<= 2): the new length's worst step against its own median (a longer row costs more)
        "worst_vs_median": round(max(probe) / probe_median, 2) if probe_median > 0 else None,
        "graphs": {"captured": status.captured, "capture_s": round(status.capture_s, 3), "failed": status.failed,
                   "memory_mb": status.memory_mb},
    }


def ops_per_step(model: str, device: str | None = None, dtype: str | None = None) -> dict[str, Any]:
    """The aten ops of one static step at batch 1 (a TorchDispatchMode counts every op the step
    dispatches, the backbone's included): what issue 47's goal of 1,200 on ``full`` counts."""
    # lazy: start-up (numpy, torch)
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    # lazy: start-up (numpy, torch)
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.sampler import FastSampler, SamplerOptions

    class Count(TorchDispatchMode):  # type: ignore[no-untyped-call]
        ops = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            self.ops += 1
            return func(*args, **(kwargs or {}))

    engine = Engine.load(model, device=device, dtype=dtype)
    sampler = FastSampler(engine.model, SamplerOptions(length_bucketing=True, block_attention=False, static_step=True))
    counts: list[int] = []
    plan_of = sampler.runner.plan

    def plan(shape: Any) -> Any:
        made = plan_of(shape)
        if "step" not in vars(made):
            step = made.step

            def counted() -> None:
                with Count() as rec:  # type: ignore[no-untyped-call]
                    step()
                counts.append(rec.ops)
            setattr(made, "step", counted)  # noqa: B010 (an instance's step, replaced)
        return made

    sampler.runner.plan = plan  # type: ignore[method-assign]
    with torch.inference_mode():
        engine.render_tokens(["Markets closed higher today."], [reference_prompt(engine)], ["en"], num_step=2,
                             seeds=[3], sampler=sampler)
    return {"model": engine.loaded.spec.name, "dtype": engine.loaded.dtype_name, "kernels": sampler.runner.kernels,
            "length": sampler.last_stats.length, "ops_per_step": max(counts)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnistudio.bench.probe", description=__doc__.splitlines()[0])
    parser.add_argument("--num-step", type=int, default=10, help="diffusion steps a sentence (default 10)")
    add_model_options(parser)
    parser.add_argument("--ops", action="store_true", help="count the aten ops of one step instead")
    parser.add_argument("--profile", action="store_true", help="where one step's time goes instead (attention "
                        "projections and core, MLP, the rest of the backbone, outside it)")
    parser.set_defaults(model="tiny", device="cpu")
    args = parser.parse_args(argv)

    if args.profile:
        # lazy: start-up (the model stack)
        from omnistudio.bench.step_profile import step_profile
        from omnistudio.flags.engine import engine_from_args

        print(json.dumps({**step_profile(engine_from_args(args), args.num_step), "provenance": provenance()}))
        return 0
    if args.ops:
        print(json.dumps({**ops_per_step(args.model, args.device, args.dtype), "provenance": provenance()}))
        return 0

    result = run(args.model, device=args.device, dtype=args.dtype, num_step=args.num_step)
    print(json.dumps({**result, "provenance": provenance()}))
    if graph_failures(result):
        print(f"probe: {graph_failures(result)} step graph capture(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
