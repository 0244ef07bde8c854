"""Helpers of the static step's tests (tests/test_static_step.py, tests/test_step_backbone.py): the sampler
options, the lines, one diffusion pass, an aten-op recorder and a step wrapper."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from omnistudio.engine.reference import Reference
from omnistudio.engine.sampler import FastSampler, SamplerOptions
from omnistudio.engine.static_step import StepPlan

# The fast sampler as it runs on CUDA without the static step: bucketed rows, one masked pass.
STEPWISE = SamplerOptions(length_bucketing=True, block_attention=False)
STATIC = replace(STEPWISE, static_step=True)
LINES = [
    "Good evening.",
    "The council met today to discuss the new budget for schools and roads across the region.",
    "Rain is expected over the weekend in the north.",
    "Markets closed higher.",
    "In sport, the home side won their third match in a row after a late goal.",
    "Traffic is heavy on the ring road.",
    "Officials said the bridge will reopen on Monday morning.",
    "That is all for now.",
]


def three_voices(engine: Any, voice_roster_file: Any) -> list[Any]:
    """Three different speakers (flite recordings): a batch of them is a dialogue."""
    from support.voices import ANCHORS, transcript

    return [engine.prompt_for(Reference(voice_roster_file.parent / f"{a}_en.wav", transcript(a)))
            for a in ANCHORS[:3]]


def render(engine: Any, sampler: FastSampler, texts: list[str], voices: list[Any], guidance: float = 2.0,
           num_step: int = 4, **gen: Any) -> list[torch.Tensor]:
    """One diffusion pass through the engine (per-item seeds, blends' embedding overrides); four steps a
    sentence by default (every step runs the same code; the shapes test runs the product's ten)."""
    pending = engine.render_tokens(texts, voices, ["en"] * len(texts), seeds=list(range(3, 3 + len(texts))),
                                   guidance_scale=guidance, sampler=sampler, num_step=num_step, **gen)
    return [t for t in pending.tokens.tokens]


HOST_READS = {"_local_scalar_dense", "item", "nonzero", "masked_select", "is_nonzero", "equal", "tolist"}


class OpRecorder(TorchDispatchMode):
    """Every aten op run inside the block, and the ones that read a tensor's value on the host."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []
        self.host_reads: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.__name__.split(".")[0]
        self.ops.append(name)
        tags = set(getattr(func, "tags", ()))
        indexing = _indexing(name, args)  # None: not an indexing op
        dynamic = torch.Tag.dynamic_output_shape in tags and indexing is None
        reads = (name in HOST_READS or torch.Tag.data_dependent_output in tags or dynamic or indexing == "boolean"
                 or to_host(name, args, kwargs))
        if reads:
            self.host_reads.append(str(func))
        return func(*args, **kwargs)


def _indexing(name: str, args: Any) -> str | None:
    """``x[rows, pos]`` (read or write) with integer index tensors: "integer", a static shape; with a
    boolean mask: "boolean" (the positions are found with nonzero, a host read on a GPU)."""
    if name not in ("index", "index_put", "index_put_", "_index_put_impl_") or len(args) < 2:
        return None
    return "boolean" if any(i is not None and i.dtype in (torch.bool, torch.uint8) for i in args[1]) else "integer"


def to_host(name: str, args: Any, kwargs: Any) -> bool:
    """A copy from another device to the CPU (what ``.cpu()`` and ``.tolist()`` on a GPU tensor do)."""
    if name not in ("_to_copy", "copy_", "to"):
        return False
    source = next((a for a in args if isinstance(a, torch.Tensor)), None)
    target = kwargs.get("device")
    if name == "copy_" and len(args) > 1:
        source, target = args[1], args[0].device
    return source is not None and source.device.type != "cpu" and torch.device(target or "cpu").type == "cpu"


def step_replaced(sampler: FastSampler, wrap: Any) -> None:
    """From now on every plan of ``sampler`` runs ``wrap(plan, step)`` in place of its step."""
    runner = sampler.runner
    plan_of = runner.plan

    def plan(shape: Any) -> StepPlan:
        made = plan_of(shape)
        if "step" not in vars(made):
            made.step = wrap(made, made.step)  # type: ignore[method-assign]
        return made

    runner.plan = plan  # type: ignore[method-assign]
