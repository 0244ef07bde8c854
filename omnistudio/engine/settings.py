"""The engine's settings as one value: what every client builds once (from its flags, its settings file,
its request) and hands down to :func:`~omnistudio.voices.session.open_engine`, the server, MCP and Ray.

Nothing here loads anything or imports torch: the checks are of names only (which devices and CPUs can
run a choice is checked when the model loads, by the engine's own checks)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from omnistudio.errors import UserError

from omnistudio.config import QUANTIZE

SAMPLERS = ("fast", "stock")


@dataclass(frozen=True)
class EngineConfig:
    """Which model, where, in which precision, with which sampler, quantisation, compilation and threads."""

    model: str | None = None  # hub id, checkpoint folder, tiny|mid|full; None: $OMNISTUDIO_MODEL or the default
    device: str | None = None  # cpu, cuda, cuda:N, mps; None: the best there is
    dtype: str | None = None  # auto, fp32, bf16, fp16; None: auto
    sampler: str = "fast"  # fast | stock
    quantize: str = "none"  # none | int8 (the backbone's linear layers)
    compile: bool | None = None  # the persistent compiled backbone; None: the device's default
    threads: int | None = None  # torch's CPU threads; None: torch's choice

    def checked(self) -> EngineConfig:
        """The same settings with names normalised, or one line naming the one that is not a choice."""
        sampler = (self.sampler or "fast").strip().lower()
        if sampler not in SAMPLERS:
            raise UserError(f"sampler '{self.sampler}': use {' or '.join(SAMPLERS)}")
        quantize = (self.quantize or "none").strip().lower()
        if quantize not in QUANTIZE:
            raise UserError(f"unknown --quantize '{self.quantize}': use {' or '.join(QUANTIZE)}")
        if self.threads is not None and int(self.threads) < 1:
            raise UserError(f"threads must be at least 1, got {self.threads}")
        return replace(self, sampler=sampler, quantize=quantize)
