"""Attention per block: it matches the block-diagonal masked pass, the sampler really uses it, and it
leaves stock untouched."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from omnistudio.engine.block_attention import attention_blocks, block_attention, install_block_attention
from omnistudio.engine.reference import Reference
from omnistudio.engine.sampler import FastSampler, SamplerOptions


def _qkv(rows: int, length: int, heads: int = 4, kv_heads: int = 2, dim: int = 16) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(rows, heads, length, dim), torch.randn(rows, kv_heads, length, dim),
            torch.randn(rows, kv_heads, length, dim))


class _Attn(torch.nn.Module):
    num_key_value_groups = 2
    is_causal = True  # as Qwen3Attention: only a mask makes it bidirectional


def test_block_attention_matches_the_block_diagonal_mask() -> None:
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    q, k, v = _qkv(rows=2, length=24)
    blocks = [[(0, 14), (14, 22)], [(0, 10)]]  # row 0: cond + uncond + 2 padding; row 1: 14 padding
    mask = torch.zeros(2, 1, 24, 24, dtype=torch.bool)
    for r, spans in enumerate(blocks):
        for s, e in spans:
            mask[r, :, s:e, s:e] = True
    mask[..., range(24), range(24)] |= True  # padding attends to itself (no empty rows)
    masked, _ = sdpa_attention_forward(_Attn(), q, k, v, mask, scaling=0.25)
    with attention_blocks(blocks):
        ours, _ = block_attention(_Attn(), q, k, v, mask, scaling=0.25)
    assert ours.shape == masked.shape == (2, 24, 4, 16)
    for r, spans in enumerate(blocks):
        for s, e in spans:
            torch.testing.assert_close(ours[r, s:e], masked[r, s:e], rtol=1e-5, atol=1e-6)


def test_without_blocks_it_is_transformers_sdpa_exactly() -> None:
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    q, k, v = _qkv(rows=1, length=12)
    mask = torch.ones(1, 1, 12, 12, dtype=torch.bool)
    assert torch.equal(block_attention(_Attn(), q, k, v, mask)[0], sdpa_attention_forward(_Attn(), q, k, v, mask)[0])


@contextmanager
def attention_kept(llm: Any) -> Iterator[None]:
    """The backbone's attention implementation as it was before the block, whatever the block sets (the
    engines are session fixtures: a later test must find them as the fixture made them)."""
    saved = llm.config._attn_implementation
    try:
        yield
    finally:
        llm.set_attn_implementation(saved)
    assert llm.config._attn_implementation == saved


def test_stock_is_unchanged_by_the_installed_attention(bf16_engine: Any, ref_wav: Path) -> None:
    """Installing block attention on a model does not move a stock synthesis by one bit."""
    from omnistudio.engine.block_attention import BLOCK_ATTENTION

    llm = bf16_engine.model.llm
    ref = Reference(ref_wav, "This is the reference voice for our test.")
    with attention_kept(llm):
        llm.set_attn_implementation("sdpa")
        before = bf16_engine.synthesize("Rain is expected.", ref, seed=5, num_step=4, sampler=None).pcm
        assert install_block_attention(llm) and llm.config._attn_implementation == BLOCK_ATTENTION
        after = bf16_engine.synthesize("Rain is expected.", ref, seed=5, num_step=4, sampler=None).pcm
    assert (before == after).all()


def test_compiled_backbone_keeps_the_masked_pass(tiny_engine: Any) -> None:
    llm = tiny_engine.model.llm
    with attention_kept(llm):  # _effective installs block attention on the shared model
        assert FastSampler._effective(SamplerOptions(compile_backbone=True, block_attention=True), llm) == \
            SamplerOptions(compile_backbone=True, block_attention=False)
        assert FastSampler._effective(SamplerOptions(block_attention=True), llm).block_attention


def test_default_sampler_attends_per_block_on_cpu(tiny_engine: Any, ref_wav: Path) -> None:
    """The blocks the sampler hands over are the layout's: every call sees them, one span per block."""
    from omnistudio.engine import block_attention as mod

    seen: list[Any] = []
    real = mod.sdpa_per_block

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(mod._blocks.get())
        return real(*args, **kwargs)

    with attention_kept(tiny_engine.model.llm):  # the sampler installs block attention on the shared model
        sampler = FastSampler(tiny_engine.model)  # CPU defaults
        assert sampler.options.block_attention
        mod.sdpa_per_block = spy
        try:
            ref = Reference(ref_wav, "This is the reference voice for our test.")
            tiny_engine.synthesize("Good evening.", ref, seed=3, num_step=4, sampler=sampler)
        finally:
            mod.sdpa_per_block = real
    layers = tiny_engine.model.config.llm_config.num_hidden_layers
    assert len(seen) == 4 * layers  # every layer of every step
    (spans,) = seen[0]  # one row: [cond | uncond]
    assert len(spans) == 2 and spans[0][0] == 0 and spans[0][1] == spans[1][0]
