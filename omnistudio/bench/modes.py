"""What the bench command hands each mode module, as types: the group its mode flag joins
(``add_flags(parser, modes)``), the engine opener and the progress callback of ``run(args, open_engine)``,
and the step-graph counts several modes report. Nothing here runs or loads anything."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeAlias, TypedDict

if TYPE_CHECKING:
    from omnistudio.engine.engine import Engine

# The mutually exclusive group of the mode flags (--stream, --dialogue, ...).
Modes: TypeAlias = argparse._MutuallyExclusiveGroup
# progress(done, total, label): each step of a run.
Progress: TypeAlias = Callable[[int, int, str], None]
# open_engine(args, sampler): the engine the flags name, loaded with the sampler ("fast" or "stock").
OpenEngine: TypeAlias = "Callable[[argparse.Namespace, str], Engine]"


class GraphCounts(TypedDict):
    """The diffusion step's CUDA graphs a warm-up captured (``GraphStatus``), as a mode reports them."""

    captured: int
    capture_s: float
    failed: int


def graph_failures(result: Mapping[str, object]) -> int:
    """The step-graph captures that failed in a mode's result (its ``graphs``: one ``GraphCounts``, or one
    per variant): a bench that meets one exits non-zero, since its figures are of the eager step."""
    graphs = result.get("graphs")
    if not isinstance(graphs, Mapping):
        return 0
    counts = [graphs] if "failed" in graphs else [g for g in graphs.values() if isinstance(g, Mapping)]
    return sum(int(c.get("failed", 0) or 0) for c in counts)


def agreement(row: Mapping[str, object], key: str) -> float:
    """A variant row's share of tokens (``token_agreement``, ``baseline_agreement``): the float it holds."""
    value = row[key]
    if not isinstance(value, float):
        raise TypeError(f"{key} of {row.get('name')} is {value!r}, not a share")
    return value
