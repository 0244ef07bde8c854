"""Opening an engine from plain values (model, device, dtype, sampler): what every client does first."""

from __future__ import annotations

from collections.abc import Callable

from omnistudio.engine.engine import Engine
from omnistudio.errors import UserError

SAMPLERS = ("fast", "stock")


def open_engine(model: str | None = None, device: str | None = None, dtype: str | None = None,
                sampler: str = "fast", progress: Callable[[str], None] | None = None) -> Engine:
    """Load ``model`` (hub id, checkpoint directory, tiny/mid/full) and install ``sampler``."""
    if sampler not in SAMPLERS:
        raise UserError(f"sampler '{sampler}': use {' or '.join(SAMPLERS)}")
    engine = Engine.load(model, device=device, dtype=dtype, progress=progress)
    if sampler == "fast":
        try:
            from omnistudio.engine.sampler import FastSampler
        except ImportError:
            return engine
        engine.sampler = FastSampler(engine.model)
    return engine
