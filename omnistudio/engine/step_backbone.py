"""The backbone's forward as the static step runs it: fewer kernels, the same numbers.

:class:`~omnistudio.engine.static_step.StepPlan` calls the Qwen3 backbone once per diffusion step over
a row whose shapes never change. transformers' forward does more than that step needs: it builds a KV
cache and copies every layer's keys and values into it (two copies per layer per step, never read
again), converts the boolean mask to an additive one inside every attention call, recomputes the
rotary tables from the positions on every step, and spends about 80 aten ops a layer. :class:`StepBackbone`
runs the same modules over the same weights with what the plan prepared between sentences:

- no cache;
- the attention mask as an additive bias in the compute dtype (0 where a position may attend, -inf
  elsewhere: what SDPA makes of a boolean mask itself);
- the rotary tables, computed once per sentence by the backbone's own ``rotary_emb``;
- RoPE as ``q * cos + roll(q) * sin'`` with ``sin'`` the table with its first half negated (the same
  products as ``rotate_half``'s ``cat((-x2, x1)) * sin``, one op instead of four);
- grouped-query heads repeated with one ``index_select`` (transformers' ``repeat_kv``: three ops);
- RMSNorm as ``rms_norm`` (then the weight's product, on bf16/fp16) where that is bit-equal to
  transformers' (on the CPU, checked by tests/test_step_backbone.py), else transformers' own arithmetic.

About 37 aten ops a layer instead of 81 on bf16: tokens equal transformers' forward at the same dtype.

The kernels are a seam (:class:`StepKernels`): on CUDA, with ``liger-kernel`` importable, its fused
RMSNorm and RoPE take the norm's and the rotation's place (``OMNISTUDIO_STEP_KERNELS=exact`` keeps
the exact ones; ``liger`` asks for it). It is never a dependency and never used on the CPU; a
self-check at start (liger against the exact arithmetic on a small tensor) turns it off where it
fails. ``bench --probe`` reports which kernels ran.

Only a backbone this module knows is run this way (transformers' Qwen3 on SDPA, every layer full
attention, its forward not replaced by a compiled one): anything else is called as a module, with
``use_cache=False`` and the prepared mask.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from omnistudio.engine.block_attention import BLOCK_ATTENTION

log = logging.getLogger(__name__)

KERNELS_ENV = "OMNISTUDIO_STEP_KERNELS"  # auto (default) | exact | liger

Norm = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]
Rope = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def hf_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """transformers' ``Qwen3RMSNorm.forward``, op for op (no-op casts left out)."""
    dtype = x.dtype
    h = x if dtype == torch.float32 else x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * (h if dtype == torch.float32 else h.to(dtype))


def fused_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """:func:`hf_norm` in one ``rms_norm`` op on float32, two on bf16/fp16 (the CPU kernel normalises in
    float32 and rounds once, as transformers does before scaling): bit-equal on the CPU (tests)."""
    if x.dtype == torch.float32 and weight.dtype == torch.float32:
        return F.rms_norm(x, (x.size(-1),), weight, eps)
    return weight * F.rms_norm(x, (x.size(-1),), None, eps)


def roll_rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin_signed: torch.Tensor,
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """``apply_rotary_pos_emb`` with ``sin_signed`` from :func:`signed_sin`: the same products and sums."""
    half = q.size(-1) // 2
    return (q * cos) + (q.roll(half, -1) * sin_signed), (k * cos) + (k.roll(half, -1) * sin_signed)


def signed_sin(sin: torch.Tensor) -> torch.Tensor:
    """The sine table with its first half negated: ``roll(x) * signed_sin(sin) == rotate_half(x) * sin``."""
    half = sin.size(-1) // 2
    return torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)


@dataclass(frozen=True)
class StepKernels:
    """The norm and the rotation a step runs (``name`` for the benches and /health)."""

    name: str
    norm: Norm
    rope: Rope
    signed: bool  # the rope reads the sine table with its first half negated (roll_rope)


EXACT = StepKernels("exact", hf_norm, roll_rope, signed=True)
EXACT_FUSED = StepKernels("exact", fused_norm, roll_rope, signed=True)


def _liger() -> StepKernels | None:
    try:  # never a dependency: only where it is installed
        functional: Any = importlib.import_module("liger_kernel.transformers.functional")
        liger_rms_norm, liger_rope = functional.liger_rms_norm, functional.liger_rope
    except Exception:  # noqa: BLE001 - absent, or broken by its own imports: not used
        return None

    def norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        out: torch.Tensor = liger_rms_norm(x, weight, eps, 0.0, "llama", False)
        return out

    def rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
             ) -> tuple[torch.Tensor, torch.Tensor]:
        q2, k2 = liger_rope(q, k, cos.squeeze(1), sin.squeeze(1))
        return q2, k2

    return StepKernels("liger", norm, rope, signed=False)


def _agrees(kernels: StepKernels, device: torch.device, dtype: torch.dtype) -> bool:
    """``kernels`` against the exact arithmetic on a small random tensor of the step's dtype."""
    try:
        gen = torch.Generator(device="cpu").manual_seed(0)
        x = torch.randn((2, 4, 16, 64), generator=gen).to(device, dtype)
        w = torch.randn((64,), generator=gen).to(device, dtype)
        angles = torch.randn((2, 1, 16, 32), generator=gen).to(device)
        cos = torch.cat((angles.cos(), angles.cos()), -1).to(dtype)
        sin = torch.cat((angles.sin(), angles.sin()), -1).to(dtype)
        tol = 2e-2 if dtype != torch.float32 else 1e-4
        ok = torch.allclose(kernels.norm(x, w, 1e-6).float(), hf_norm(x, w, 1e-6).float(), rtol=tol, atol=tol)
        q, k = kernels.rope(x, x[:, :2].contiguous(), cos, sin)
        eq, ek = roll_rope(x, x[:, :2].contiguous(), cos, signed_sin(sin))
        return bool(ok and torch.allclose(q.float(), eq.float(), rtol=tol, atol=tol)
                    and torch.allclose(k.float(), ek.float(), rtol=tol, atol=tol))
    except Exception as exc:  # noqa: BLE001 - a kernel that cannot run here is not used
        log.warning("step kernels %s failed their self-check (%s): using the exact ones", kernels.name, exc)
        return False


def choose_kernels(device: torch.device, dtype: torch.dtype, setting: str | None = None) -> StepKernels:
    """The step's kernels for ``device`` and ``dtype``: liger's fused ones on CUDA where importable and
    agreeing with the exact arithmetic (unless ``OMNISTUDIO_STEP_KERNELS=exact``), else the exact ones
    (the one-op norm only on the CPU, where it is bit-equal on float32)."""
    setting = (setting if setting is not None else os.environ.get(KERNELS_ENV, "auto")).strip().lower() or "auto"
    if setting not in ("auto", "exact", "liger"):
        log.warning("%s=%s is not one of auto, exact, liger: using auto", KERNELS_ENV, setting)
        setting = "auto"
    exact = EXACT_FUSED if device.type == "cpu" else EXACT
    if setting == "exact" or device.type != "cuda":
        return exact
    liger = _liger()
    if liger is None:
        if setting == "liger":
            log.warning("%s=liger but liger-kernel is not importable: using the exact kernels", KERNELS_ENV)
        return exact
    return liger if _agrees(liger, device, dtype) else exact


def supported(llm: Any) -> bool:
    """Whether :class:`StepBackbone` runs ``llm`` exactly as its own forward would."""
    config = getattr(llm, "config", None)
    if type(llm).__name__ != "Qwen3Model" or config is None or "forward" in vars(llm):
        return False
    # block attention (engine/block_attention.py) is SDPA wherever no blocks are set, as in every static step
    if getattr(config, "_attn_implementation", None) not in ("sdpa", BLOCK_ATTENTION):
        return False
    if any(t != "full_attention" for t in (getattr(config, "layer_types", None) or ["full_attention"])):
        return False
    for layer in getattr(llm, "layers", ()):
        attn: Any = getattr(layer, "self_attn", None)
        if type(layer).__name__ != "Qwen3DecoderLayer" or type(attn).__name__ != "Qwen3Attention":
            return False
        norms = (layer.input_layernorm, layer.post_attention_layernorm, attn.q_norm, attn.k_norm)
        if any(type(n).__name__ != "Qwen3RMSNorm" for n in norms) or type(layer.mlp).__name__ != "Qwen3MLP":
            return False
        if getattr(attn, "sliding_window", None) is not None:
            return False
    return type(getattr(llm, "norm", None)).__name__ == "Qwen3RMSNorm"


def call_pre_hooks(module: torch.nn.Module, kwargs: Mapping[str, Any]) -> None:
    """``module``'s forward pre-hooks, as calling it with ``kwargs`` would run them (a hook's return value
    is ignored: the step's inputs are its buffers)."""
    with_kwargs = getattr(module, "_forward_pre_hooks_with_kwargs", {})
    for hook_id, hook in list(module._forward_pre_hooks.items()):
        if hook_id in with_kwargs:
            hook(module, (), dict(kwargs))
        else:
            hook(module, ())


class StepBackbone:
    """The Qwen3 backbone's forward over a plan's prepared mask and rotary tables (see the module doc)."""

    def __init__(self, llm: Any, kernels: StepKernels) -> None:
        self.llm: Any = llm
        self.kernels = kernels
        config: Any = llm.config
        self.layers: list[Any] = list(llm.layers[: config.num_hidden_layers])
        first = self.layers[0].self_attn
        self.head_dim = int(first.head_dim)
        self.scaling = float(first.scaling)
        self.groups = int(first.num_key_value_groups)
        heads = int(config.num_attention_heads)
        device = next(llm.parameters()).device
        # transformers' repeat_kv: head h reads key/value head h // groups
        self.kv_index = torch.arange(heads, device=device) // self.groups if self.groups > 1 else None

    @classmethod
    def of(cls, llm: torch.nn.Module, setting: str | None = None) -> StepBackbone | None:
        """The step's backbone for ``llm``, or None where only its own forward will do."""
        if not supported(llm):
            return None
        weight = next(llm.parameters())
        return cls(llm, choose_kernels(weight.device, weight.dtype, setting))

    def tables(self, like: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The rotary tables (rows, 1, L, D) for ``position_ids`` (rows, L), as the kernels read them."""
        cos, sin = self.llm.rotary_emb(like, position_ids)
        if self.kernels.signed:
            sin = signed_sin(sin)
        return cos.unsqueeze(1), sin.unsqueeze(1)

    def __call__(self, embeds: torch.Tensor, bias: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                 ) -> torch.Tensor:
        """The last hidden states (after the final norm) of ``embeds`` (R, L, H) under the additive
        ``bias`` (R, 1, L, L) with the tables of :meth:`tables`."""
        norm, rope = self.kernels.norm, self.kernels.rope
        r, length = embeds.shape[:2]
        heads = (r, length, -1, self.head_dim)
        hidden = embeds
        for layer in self.layers:
            attn: Any = layer.self_attn
            x = norm(hidden, layer.input_layernorm.weight, layer.input_layernorm.variance_epsilon)
            q = norm(attn.q_proj(x).view(heads), attn.q_norm.weight, attn.q_norm.variance_epsilon).transpose(1, 2)
            k = norm(attn.k_proj(x).view(heads), attn.k_norm.weight, attn.k_norm.variance_epsilon).transpose(1, 2)
            v = attn.v_proj(x).view(heads).transpose(1, 2)
            q, k = rope(q, k, cos, sin)
            if self.kv_index is not None:
                k, v = k.index_select(1, self.kv_index), v.index_select(1, self.kv_index)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=0.0, scale=self.scaling)
            hidden = hidden + attn.o_proj(out.transpose(1, 2).reshape(r, length, -1))
            x = norm(hidden, layer.post_attention_layernorm.weight, layer.post_attention_layernorm.variance_epsilon)
            hidden = hidden + layer.mlp(x)
        final: Any = self.llm.norm
        out_hidden: torch.Tensor = norm(hidden, final.weight, final.variance_epsilon)
        return out_hidden
