"""Attention per block: the fast sampler's ``block_attention`` technique.

Each backbone row the sampler builds holds blocks (the conditional sequence,
the unconditional copy, padding) that a block-diagonal mask keeps apart. With
the blocks known, attention runs once per block without a mask instead of
once per row with the mask: it skips the masked-out products (cond x uncond,
padding) and the key/value head copies that SDPA's masked path makes for
grouped-query attention. The same softmax over the same keys, summed in
another order: rounding-level drift, like ``trimmed_guidance``.

:func:`block_attention` is registered with transformers' ``AttentionInterface``;
outside a sampler call (no blocks set) and inside a compiled graph it hands
every call to transformers' own SDPA function unchanged, so stock generation
on the same model is untouched (tested bit for bit).

Tried and left out: oneDNN prepacked bf16 linear weights
(``mkldnn._reorder_linear_weight``/``_linear_pointwise``) ran the backbone's
matmuls about 5% faster but are not bit-identical to ``F.linear`` at every row
count (they differ at 514 rows for the 1024-wide outputs: ``F.linear`` picks
another kernel there), so they would break the lossless set's parity.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

if TYPE_CHECKING:
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)

BLOCK_ATTENTION = "omnistudio_blocks"
Blocks = Sequence[Sequence[tuple[int, int]]]  # per backbone row: the [start, end) spans of its blocks

_blocks: ContextVar[Blocks | None] = ContextVar("omnistudio_attention_blocks", default=None)


def install_block_attention(llm: PreTrainedModel) -> bool:
    """Route the backbone's attention through :func:`block_attention` (only over SDPA); True if installed."""
    # lazy: start-up (transformers)
    from transformers import AttentionInterface

    current = llm.config._attn_implementation
    if current == BLOCK_ATTENTION:
        return True
    if current != "sdpa":
        log.info("block attention off: the backbone uses %s attention, not sdpa", current)
        return False
    AttentionInterface.register(BLOCK_ATTENTION, block_attention)
    llm.set_attn_implementation(BLOCK_ATTENTION)
    return True


@contextmanager
def attention_blocks(blocks: Blocks | None) -> Iterator[None]:
    """Inside the block, backbone calls attend within ``blocks`` (None: the mask, as stock)."""
    token = _blocks.set(blocks)
    try:
        yield
    finally:
        _blocks.reset(token)


def block_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                    attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                    is_causal: bool | None = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """transformers' attention signature: SDPA per block when blocks are set, else transformers' SDPA."""
    # lazy: start-up (transformers)
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    # A compiled backbone traces transformers' SDPA as is (no context lookup inside the graph).
    blocks = None if torch.compiler.is_compiling() else _blocks.get()
    if blocks is None or query.shape[2] != key.shape[2] or len(blocks) != query.shape[0]:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    return sdpa_per_block(query, key, value, blocks, scaling), None


def sdpa_per_block(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, blocks: Blocks,
                   scaling: float | None) -> torch.Tensor:
    """(R, H, L, D) queries, (R, H_kv, L, D) keys/values -> (R, L, H, D), attending within each block."""
    rows, heads, length, dim = query.shape
    gqa = query.shape[1] != key.shape[1]
    out = query.new_zeros((rows, length, heads, dim))  # padding positions: never read
    for r, spans in enumerate(blocks):
        for start, end in spans:
            part = F.scaled_dot_product_attention(query[r:r + 1, :, start:end], key[r:r + 1, :, start:end],
                                                  value[r:r + 1, :, start:end], scale=scaling, enable_gqa=gqa)
            out[r, start:end] = part[0].transpose(0, 1)
    return out
