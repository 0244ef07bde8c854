"""Optional ``torch.compile`` of the backbone and the vocoder, with a logged fallback.

Compilation is lazy in torch, so each compiled module is tried once on a small
input right away; if that fails (no compiler toolchain, an unsupported op, a
CUDA-graph problem) the module goes back to eager mode and the reason is
logged. The vocoder is never cast to fp16 here (it underflows); it stays fp32.
Compiled modules keep being called the normal way (``model.llm(...)``), so
forward hooks still see one call per step.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from omnistudio.errors import describe

log = logging.getLogger(__name__)

MODES = ("off", "default", "reduce-overhead")


def _compile_module(module: torch.nn.Module, mode: str, trial: Any, what: str) -> str:
    """Compile ``module`` in place and run ``trial()``; on failure revert to eager. Returns a status."""
    if getattr(module, "_compiled_call_impl", None) is not None:
        return "on"
    try:
        module.compile(mode=mode, dynamic=True)
        with torch.inference_mode():
            trial()
    except Exception as exc:  # any compiler failure: fall back, never break synthesis
        module._compiled_call_impl = None
        reason = describe(exc)
        log.warning("torch.compile of the %s failed, running eager: %s", what, reason)
        return f"failed: {reason}"
    log.info("torch.compile of the %s: on (mode %s)", what, mode)
    return "on"


def compile_backbone(model: Any, mode: str = "default") -> str:
    """Compile ``model.llm``; returns "on" or "failed: reason"."""
    hidden = model.config.llm_config.hidden_size
    device, dtype = model.device, next(model.llm.parameters()).dtype

    def trial() -> None:
        embeds = torch.zeros((2, 16, hidden), device=device, dtype=dtype)
        mask = torch.ones((2, 1, 16, 16), dtype=torch.bool, device=device)
        model.llm(inputs_embeds=embeds, attention_mask=mask, return_dict=True)

    return _compile_module(model.llm, mode, trial, "backbone")


def compile_vocoder(model: Any, mode: str = "default") -> str:
    """Compile the vocoder's acoustic decoder (fp32); returns "on" or "failed: reason"."""
    tok = model.audio_tokenizer
    decoder = tok.acoustic_decoder
    num_cb = int(model.config.num_audio_codebook)

    def trial() -> None:
        tok.decode(torch.zeros((1, num_cb, 25), dtype=torch.long, device=tok.device))

    return _compile_module(decoder, mode, trial, "vocoder")


def apply_compile(model: Any, backbone: bool = False, vocoder: str = "off",
                  backbone_mode: str = "default") -> dict[str, str]:
    """Apply the compile options of a :class:`~omnistudio.engine.sampler.SamplerOptions`."""
    if vocoder not in MODES:
        raise ValueError(f"compile mode must be one of {', '.join(MODES)}")
    status = {"backbone": "off", "vocoder": "off"}
    if backbone:
        status["backbone"] = compile_backbone(model, backbone_mode)
    if vocoder != "off":
        status["vocoder"] = compile_vocoder(model, vocoder)
    return status


@contextmanager
def eager(model: Any) -> Iterator[None]:
    """Run ``model`` uncompiled inside the block (the bench's stock runs), then restore."""
    modules = [model.llm, model.audio_tokenizer.acoustic_decoder]
    saved = [getattr(m, "_compiled_call_impl", None) for m in modules]
    for m in modules:
        m._compiled_call_impl = None
    try:
        yield
    finally:
        for m, impl in zip(modules, saved):
            m._compiled_call_impl = impl
