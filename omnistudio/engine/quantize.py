"""int8 linear layers in the backbone (``--quantize int8``), and where int8 pays.

Every ``nn.Linear`` of the Qwen3 backbone (``model.llm``: the attention projections and the MLP) becomes
PyTorch's own dynamic quantized Linear (``torch.ao.nn.quantized.dynamic.Linear``, the fbgemm / oneDNN
kernels of torch's ``x86`` quantized engine): weights int8, one scale per output channel (symmetric,
``max |w| / 127``, computed here: :func:`weight_scales`); activations quantized per call to uint8 with one
scale for the whole input (the kernel's ``reduce_range``: 7 bits, so AVX2's ``vpmaddubsw`` never
saturates), int32 accumulation, fp32 out. The audio embeddings, the audio heads (``model.audio_heads``)
and the vocoder are left as they are (the vocoder fp32). On a bf16 backbone the layer takes bf16 in and
gives bf16 out (its arithmetic is int8 with fp32 scales either way).

Which of torch's two x86 int8 kernels packs the weights is measured once a process (:func:`int8_kernel`:
FBGEMM's, or oneDNN's, which reaches AMX-INT8 and VNNI; ``OMNISTUDIO_INT8_KERNEL`` pins one): the faster on
a backbone-shaped product wins. Why these kernels and not torchao's int8 configs, and what "int8 acceleration" means: docs/decisions.md
("int8 backbone"). The rule (:func:`int8_feature`): a CPU whose flags name AMX-INT8, AVX512-VNNI or
AVX-VNNI (native int8 dot products), or AVX2 (fbgemm's ``vpmaddubsw`` path: measured 1.7-2.3x faster than
fp32 on the backbone's matrix shapes on an AVX2-only EPYC). Anything else is refused with one line;
so is any device but the CPU.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.ao.nn.quantized.dynamic as nnqd

from omnistudio.config import QUANTIZE
from omnistudio.engine.cpuinfo import cpuinfo_flags
from omnistudio.errors import UserError

# /proc/cpuinfo flags that give int8 matrix products an edge over fp32, best first.
INT8_CPU_FLAGS = (("amx_int8", "AMX-INT8"), ("avx512_vnni", "AVX512-VNNI"), ("avx_vnni", "AVX-VNNI"),
                  ("avx2", "AVX2"))
QMAX = 127  # the largest int8 weight: a channel's largest |w| maps to it
log = logging.getLogger("omnistudio.engine")


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (``/proc/cpuinfo``); ``OMNISTUDIO_CPU_FLAGS`` (space-separated) stands in
    for them (tests use it; so can a user whose CPU is misread). Empty where there is no such file."""
    forced = os.environ.get("OMNISTUDIO_CPU_FLAGS")
    if forced is not None:
        return frozenset(forced.split())
    return cpuinfo_flags()


def int8_feature(flags: frozenset[str] | set[str]) -> str | None:
    """The feature that makes int8 matrix products pay on a CPU with ``flags``, or None."""
    return next((label for flag, label in INT8_CPU_FLAGS if flag in flags), None)


def check_quantize(value: str | None, device: str, flags: frozenset[str] | None = None) -> str:
    """``--quantize`` checked against the device and the CPU (one line when refused): "none" or "int8"."""
    name = str(value or "none").strip().lower()
    if name not in QUANTIZE:
        raise UserError(f"unknown --quantize '{value}': use {' or '.join(QUANTIZE)}")
    if name in ("none", "auto"):  # auto: int8 allowed, decided by the calibration (engine/calibration.py)
        return name
    if not device.startswith("cpu"):
        raise UserError(f"--quantize int8 runs on the CPU (PyTorch's x86 int8 kernels), not on {device}: "
                        "use --device cpu, or --quantize none")
    if int8_feature(cpu_flags() if flags is None else flags) is None:
        raise UserError("--quantize int8: this CPU has no int8 acceleration (none of AVX2, AVX-VNNI, "
                        "AVX512-VNNI or AMX-INT8 in its flags), so int8 would be slower than fp32; use --quantize none")
    if "x86" not in torch.backends.quantized.supported_engines:
        raise UserError("--quantize int8: this torch build has no x86 int8 kernels (fbgemm/oneDNN); "
                        "use --quantize none")
    return name


INT8_KERNELS = ("fbgemm", "onednn")  # torch's x86 int8 CPU kernels: FBGEMM's, oneDNN's (AMX-INT8 / VNNI where there)
_CHOSEN_KERNEL: dict[tuple[int, int], str] = {}  # this process's choice per weight shape, measured once each


PROBE_ROWS = 640  # about a guided step's packed rows on `full` (a short sentence, its prompt and both halves)


def time_int8_kernel(kernel: str, in_features: int, out_features: int, rows: int = PROBE_ROWS,
                     repeats: int = 8) -> float:
    """Seconds per product of a ``rows`` x ``in_features`` input with an int8 ``out_features`` x ``in_features``
    weight packed for ``kernel`` (the median of ``repeats``, after one untimed call)."""
    generator = torch.Generator().manual_seed(0)
    linear = torch.nn.Linear(in_features, out_features, bias=False)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(out_features, in_features, generator=generator) * 0.02)
    layer = int8_linear(linear, kernel)
    x = torch.randn(rows, in_features, generator=generator)
    times = []
    with torch.inference_mode():
        layer(x)
        for _ in range(repeats):
            started = time.perf_counter()
            layer(x)
            times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def choose_int8_kernel(time_kernel: Callable[[str], float], kernels: Sequence[str] = INT8_KERNELS,
                       pinned: str | None = None) -> tuple[str, dict[str, float]]:
    """The int8 kernel to pack with: ``pinned`` (``OMNISTUDIO_INT8_KERNEL``) if given, else the fastest of
    ``kernels`` by ``time_kernel`` (seconds); and what each took (empty when pinned)."""
    if pinned:
        name = pinned.strip().lower()
        if name not in INT8_KERNELS:
            raise UserError(f"OMNISTUDIO_INT8_KERNEL '{pinned}': use {' or '.join(INT8_KERNELS)}")
        if name not in torch.backends.quantized.supported_engines:
            raise UserError(f"OMNISTUDIO_INT8_KERNEL '{pinned}': this torch build has no {name} kernels")
        return name, {}
    timed = {kernel: time_kernel(kernel) for kernel in kernels if kernel in torch.backends.quantized.supported_engines}
    if not timed:
        raise UserError("--quantize int8: this torch build has none of the x86 int8 kernels (fbgemm, onednn)")
    return min(timed, key=lambda k: timed[k]), timed


def int8_kernel(in_features: int = 1024, out_features: int = 3072) -> str:
    """The int8 kernel for a backbone of this shape: pinned, or measured once a process (logged)."""
    shape = (in_features, out_features)
    if shape not in _CHOSEN_KERNEL:
        name, timed = choose_int8_kernel(lambda k: time_int8_kernel(k, in_features, out_features),
                                         pinned=os.environ.get("OMNISTUDIO_INT8_KERNEL"))
        if timed:
            log.info("int8 kernel: %s (%s)", name, ", ".join(f"{k} {t * 1e3:.2f} ms" for k, t in timed.items()))
        _CHOSEN_KERNEL[shape] = name
    return _CHOSEN_KERNEL[shape]


def weight_scales(weight: torch.Tensor) -> torch.Tensor:
    """One scale per output channel (row): its largest |w| maps to 127 (fp64, as quantize_per_channel takes)."""
    amax = weight.detach().abs().amax(dim=1).double()
    return amax.clamp_min(torch.finfo(torch.float32).tiny) / QMAX


def _dynamic_linear() -> type[torch.nn.Module]:
    with warnings.catch_warnings():  # torch.ao's eager quantization API warns that it moves to torchao
        warnings.simplefilter("ignore")

        return nnqd.Linear


class CastLinear(torch.nn.Module):
    """An int8 dynamic quantized Linear (fp32 in and out) inside a backbone of any float dtype."""

    def __init__(self, inner: torch.nn.Module, in_features: int, out_features: int) -> None:
        super().__init__()
        self.inner = inner
        self.in_features, self.out_features = in_features, out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32:
            return self.inner(x)  # type: ignore[no-any-return]
        return self.inner(x.float()).to(x.dtype)  # type: ignore[no-any-return]


def int8_linear(linear: torch.nn.Linear, kernel: str = "fbgemm") -> CastLinear:
    """``linear`` as an int8 dynamic quantized Linear that takes and gives ``linear``'s dtype, its weight
    packed for ``kernel`` (a packed weight keeps its kernel whatever torch's quantized engine is later)."""
    weight = linear.weight.detach().float()
    scales = weight_scales(weight)
    engine = torch.backends.quantized.engine
    with warnings.catch_warnings():  # quantized tensors are deprecated in favour of torchao's (decisions.md)
        warnings.simplefilter("ignore")
        qweight = torch.quantize_per_channel(weight, scales, torch.zeros_like(scales, dtype=torch.long), 0,
                                             torch.qint8)
        inner = _dynamic_linear()(linear.in_features, linear.out_features, bias_=linear.bias is not None,
                                  dtype=torch.qint8)
        torch.backends.quantized.engine = kernel
        try:
            inner.set_weight_bias(qweight, None if linear.bias is None else linear.bias.detach().float())  # type: ignore[operator]
        finally:
            torch.backends.quantized.engine = engine
    return CastLinear(inner, linear.in_features, linear.out_features)


@dataclass(frozen=True)
class QuantizeReport:
    """What :func:`quantize_backbone` did: layers replaced, their weights' size before and after, its time,
    and the kernel they were packed for."""

    layers: int
    float_mb: float  # the replaced layers' weights in their float dtype
    int8_mb: float  # the same weights in int8, with their scales
    seconds: float
    kernel: str = "fbgemm"

    def describe(self) -> str:
        return (f"int8 ({self.kernel}): {self.layers} linear layers of the backbone, weights {self.float_mb:.0f} -> "
                f"{self.int8_mb:.0f} MB, in {self.seconds:.1f} s")


def quantize_backbone(llm: torch.nn.Module) -> QuantizeReport:
    """Replace every ``nn.Linear`` inside ``llm`` (the backbone) by its int8 version, in place."""
    started = time.perf_counter()
    first = next((m for m in llm.modules() if type(m) is torch.nn.Linear), None)
    kernel = int8_kernel(first.in_features, first.out_features) if first is not None else "fbgemm"
    layers, float_bytes, int8_bytes = 0, 0, 0
    for parent in list(llm.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is not torch.nn.Linear:
                continue
            weight = child.weight
            float_bytes += weight.numel() * weight.element_size()
            int8_bytes += weight.numel() + 8 * weight.size(0)
            with torch.inference_mode():
                setattr(parent, name, int8_linear(child, kernel))
            layers += 1
    return QuantizeReport(layers, float_bytes / 2**20, int8_bytes / 2**20, time.perf_counter() - started, kernel)
