"""Optional ``torch.compile`` of the backbone and the vocoder, with a logged fallback.

Compilation is lazy in torch, so each compiled module is tried once on a small
input right away; if that fails (no compiler toolchain, an unsupported op, a
CUDA-graph problem) the module goes back to eager mode and the reason is
logged. The vocoder is never cast to fp16 here (it underflows); it stays fp32.
Compiled modules keep being called the normal way (``model.llm(...)``), so
forward hooks still see one call per step.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import cast

import torch
from torch._dynamo.utils import counters

from omnistudio.engine.upstream import OmniVoiceModel
from omnistudio.errors import describe

log = logging.getLogger(__name__)

MODES = ("off", "default", "reduce-overhead")


def _compile_module(module: torch.nn.Module, mode: str, trial: Callable[[], None], what: str) -> str:
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


def compile_backbone(model: OmniVoiceModel, mode: str = "default") -> str:
    """Compile ``model.llm``; returns "on" or "failed: reason"."""
    hidden = model.config.llm_config.hidden_size
    device, dtype = model.device, next(model.llm.parameters()).dtype

    def trial() -> None:
        embeds = torch.zeros((2, 16, hidden), device=device, dtype=dtype)
        mask = torch.ones((2, 1, 16, 16), dtype=torch.bool, device=device)
        model.llm(inputs_embeds=embeds, attention_mask=mask, return_dict=True)

    return _compile_module(model.llm, mode, trial, "backbone")


def snake(x: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """DAC's Snake activation, ``Snake1d.forward`` written as a function of its input and ``alpha``."""
    shape = x.shape
    x = x.reshape(shape[0], shape[1], -1)
    x = x + (alpha + 1e-9).reciprocal() * torch.sin(alpha * x).pow(2)
    return x.reshape(shape)


SnakeKernel = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (x, alpha) -> Snake(x)
_SNAKE_KERNELS: dict[str, SnakeKernel] = {}


def _snake_kernel(mode: str) -> SnakeKernel:
    """One compiled Snake for every activation of every vocoder (dynamic channels and length)."""
    if mode not in _SNAKE_KERNELS:
        _SNAKE_KERNELS[mode] = torch.compile(snake, mode=mode, dynamic=True)
    return _SNAKE_KERNELS[mode]


def snake_modules(model: OmniVoiceModel) -> list[torch.nn.Module]:
    return [m for m in model.audio_tokenizer.acoustic_decoder.modules() if type(m).__name__ == "Snake1d"]


def compile_vocoder(model: OmniVoiceModel, mode: str = "default") -> str:
    """Compile the vocoder's Snake activations (fp32); returns "on" or "failed: reason".

    Why not the whole decoder: with dynamic shapes, inductor's convolution lowering guards on
    each convolution's input size (ATen's CPU choice between oneDNN and its native kernel turns
    at 20,480 elements), so the compiled decoder recompiles whenever a sentence's length crosses
    one of those boundaries (measured on ``tiny``: a new graph at 40 and at 66 frames; on
    ``full``, the boundaries sit at 20 and 80 frames). The Snake activations are elementwise
    (five passes over the upsampled signal in eager mode) and shape-agnostic: one graph serves
    every activation and every length. The convolutions run on the same eager kernels as stock.
    "reduce-overhead" is compiled as "default" here: CUDA graphs are recorded per shape, so each
    new length would record a new graph.
    """
    tok = model.audio_tokenizer
    snakes = snake_modules(model)
    if not snakes:
        return "failed: no Snake activations in this vocoder"
    if getattr(snakes[0], "_compiled_call_impl", None) is not None:
        return "on"
    kernel = _snake_kernel("default" if mode == "reduce-overhead" else mode)
    for module in snakes:
        module._compiled_call_impl = functools.partial(_call_snake, kernel, module)
    num_cb = int(model.config.num_audio_codebook)
    try:
        with torch.inference_mode():
            tok.decode(torch.zeros((1, num_cb, 25), dtype=torch.long, device=tok.device))
    except Exception as exc:  # any compiler failure: fall back, never break synthesis
        for module in snakes:
            module._compiled_call_impl = None
        reason = describe(exc)
        log.warning("torch.compile of the vocoder failed, running eager: %s", reason)
        return f"failed: {reason}"
    log.info("torch.compile of the vocoder's Snake activations: on (mode %s)", mode)
    return "on"


def _call_snake(kernel: SnakeKernel, module: torch.nn.Module, hidden_states: torch.Tensor) -> torch.Tensor:
    return kernel(hidden_states, cast(torch.Tensor, module.alpha))  # Snake1d's parameter (typed Tensor | Module)


def compile_status(model: OmniVoiceModel) -> dict[str, str]:
    """Whether the backbone and the vocoder run compiled right now."""
    snakes = snake_modules(model)
    backbone = getattr(model.llm, "_compiled_call_impl", None) is not None or "forward" in vars(model.llm)
    return {"backbone": "on" if backbone else "off",
            "vocoder": "on" if snakes and getattr(snakes[0], "_compiled_call_impl", None) is not None else "off"}


def dynamo_graphs() -> int:
    """Graphs dynamo has compiled in this process so far (a recompilation adds one)."""

    return int(counters["stats"]["unique_graphs"])


def apply_compile(model: OmniVoiceModel, backbone: bool = False, vocoder: str = "off",
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
def eager(model: OmniVoiceModel) -> Iterator[None]:
    """Run ``model`` uncompiled inside the block (the bench's stock runs), then restore; the persistent
    compiled backbone (a compiled ``forward`` on the module, engine/compiled_backbone.py) included."""
    modules = [model.llm, *snake_modules(model)]
    saved = [getattr(m, "_compiled_call_impl", None) for m in modules]
    forward = vars(model.llm).pop("forward", None)
    for m in modules:
        m._compiled_call_impl = None
    try:
        yield
    finally:
        for m, impl in zip(modules, saved):
            m._compiled_call_impl = impl
        if forward is not None:
            model.llm.forward = forward
