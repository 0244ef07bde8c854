"""The static step's backbone (engine/step_backbone.py): fewer ops a step, no KV cache, the same numbers.

- a step of the static sampler runs at most 40 aten ops a layer plus 70 (the scoring and the embeddings):
  on ``tiny`` (2 layers) 140 where it ran 244; the same bound is 1,190 on ``full`` (28 layers), which
  docs/benchmarks.md records measured (1,128, from 2,350);
- no KV cache: no ``cat`` in a step and no cache made, with the step backbone and with the module's own
  forward (a backbone the step backbone does not know);
- the step backbone's hidden states equal the module's forward bit for bit, bf16 and float32, in both
  layouts (per-block positions and the stock rows);
- the fused kernels (liger) stay off on the CPU and are never imported there.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

import pytest
import torch
from support.step import LINES, STATIC, OpRecorder, render, step_replaced, three_voices

from omnistudio.engine.sampler import FastSampler
from omnistudio.engine.static_step import StepPlan

@pytest.fixture(scope="module")
def voices(tiny_engine: Any, voice_roster_file: Any) -> list[Any]:
    return three_voices(tiny_engine, voice_roster_file)


def recorded_steps(engine: Any, sampler: FastSampler, texts: list[str], voices: list[Any]) -> list[list[str]]:
    """The aten ops of each step of one render."""
    steps: list[list[str]] = []

    def recorded(_plan: StepPlan, step: Any) -> Any:
        def run() -> None:
            with OpRecorder() as rec:
                step()
            steps.append(rec.ops)
        return run

    step_replaced(sampler, recorded)
    render(engine, sampler, texts, voices)
    return steps


def test_a_step_runs_at_most_forty_ops_a_layer(tiny_engine: Any, voices: list[Any]) -> None:
    layers = int(tiny_engine.model.llm.config.num_hidden_layers)
    steps = recorded_steps(tiny_engine, FastSampler(tiny_engine.model, STATIC), LINES[:1], voices[:1])
    counts = {len(ops) for ops in steps}
    assert len(counts) == 1  # every step the same ops
    assert counts.pop() <= 40 * layers + 70


def test_no_kv_cache_in_a_step(tiny_engine: Any, voices: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the step backbone nor the module's forward (the fallback) makes a cache or copies into one."""
    import transformers.models.qwen3.modeling_qwen3 as qwen3

    made: list[int] = []

    class Counted(qwen3.DynamicCache):  # type: ignore[misc,name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(qwen3, "DynamicCache", Counted)
    layers = int(tiny_engine.model.llm.config.num_hidden_layers)
    ours = recorded_steps(tiny_engine, FastSampler(tiny_engine.model, STATIC), LINES[:1], voices[:1])
    assert all("cat" not in ops for ops in ours)
    module = FastSampler(tiny_engine.model, STATIC)
    module.runner.backbone = None  # a backbone the step backbone does not know: the module's own forward
    theirs = recorded_steps(tiny_engine, module, LINES[:1], voices[:1])
    assert all(Counter(ops)["cat"] == 2 * layers + 1 for ops in theirs)  # the rotary table and rotate_half: no cache
    assert made == []


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("packed", [True, False])
def test_the_step_backbone_equals_the_module_bit_for_bit(dtype: str, packed: bool) -> None:
    """Random rows under a block mask with padding rows, the stock layout's positions or per-block ones."""
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.step_backbone import StepBackbone

    engine = Engine.load("tiny", device="cpu", dtype=dtype)
    llm = engine.model.llm
    backbone = StepBackbone.of(llm)
    assert backbone is not None and backbone.kernels.name == "exact"
    gen = torch.Generator().manual_seed(5)
    rows, length, hidden = 3, 96, int(llm.config.hidden_size)
    weight = next(llm.parameters())
    embeds = torch.randn((rows, length, hidden), generator=gen).to(weight.dtype)
    allowed = torch.zeros((rows, 1, length, length), dtype=torch.bool)
    for r, cut in enumerate((96, 60, 0)):  # a full row, a row with padding, a padding row (itself only)
        allowed[r, :, :cut, :cut] = True
    diagonal = torch.arange(length)
    allowed[:, :, diagonal, diagonal] = True
    bias = torch.full(allowed.shape, -float("inf"), dtype=weight.dtype).masked_fill_(allowed, 0.0)
    positions = (torch.arange(length) % 40).expand(rows, -1).contiguous() if packed else None
    table_positions = positions if positions is not None else torch.arange(length).expand(rows, -1)
    cos, sin = backbone.tables(embeds, table_positions)
    with torch.inference_mode():
        ours = backbone(embeds, bias, cos, sin)
        theirs = llm(inputs_embeds=embeds, attention_mask={"full_attention": allowed}, position_ids=positions,
                     use_cache=False, return_dict=True)[0]
    assert ours.dtype == theirs.dtype and torch.equal(ours, theirs)


def test_the_norms_are_bit_equal_on_the_cpu() -> None:
    from omnistudio.engine.step_backbone import fused_norm, hf_norm

    gen = torch.Generator().manual_seed(1)
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for shape in ((2, 50, 64), (2, 50, 4, 16), (1, 7, 1024)):
            for scale in (0.01, 1.0, 40.0):
                x = (torch.randn(shape, generator=gen) * scale).to(dtype)
                w = torch.randn(shape[-1:], generator=gen).to(dtype)
                assert torch.equal(fused_norm(x, w, 1e-6), hf_norm(x, w, 1e-6)), (dtype, shape, scale)


def test_fused_kernels_stay_off_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from omnistudio.engine.step_backbone import EXACT, choose_kernels

    sys.modules.pop("liger_kernel", None)
    for setting in ("auto", "liger", "exact", "nonsense", None):
        kernels = choose_kernels(torch.device("cpu"), torch.bfloat16, setting)
        assert kernels.name == "exact" and kernels is not EXACT  # the CPU's one-op norm
    monkeypatch.setenv("OMNISTUDIO_STEP_KERNELS", "liger")
    assert choose_kernels(torch.device("cpu"), torch.bfloat16).name == "exact"
    assert "liger_kernel" not in sys.modules  # never imported on the CPU: it costs nothing there


def test_block_attention_installed_on_the_model_keeps_the_step_backbone(tiny_engine: Any, voices: list[Any]) -> None:
    """A sampler with block attention routes the model's attention through it for good (engine/block_attention.py);
    with no blocks set that is SDPA, so a later static step still runs the step backbone (it fell back to the
    module's forward, with a KV cache, once any block-attention sampler had run in the process)."""
    from omnistudio.engine.block_attention import BLOCK_ATTENTION
    from omnistudio.engine.sampler import SamplerOptions

    llm = tiny_engine.model.llm
    saved = llm.config._attn_implementation
    try:
        FastSampler(tiny_engine.model, SamplerOptions(block_attention=True))
        assert llm.config._attn_implementation == BLOCK_ATTENTION
        steps = recorded_steps(tiny_engine, FastSampler(tiny_engine.model, STATIC), LINES[:1], voices[:1])
        assert all("cat" not in ops for ops in steps)
        assert max(len(ops) for ops in steps) <= 40 * int(llm.config.num_hidden_layers) + 70
    finally:
        llm.set_attn_implementation(saved)
