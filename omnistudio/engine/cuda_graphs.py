"""The static diffusion step replayed from captured CUDA graphs, one per step shape.

On CUDA the host, not the GPU, sets the pace of an eager step (a Python thread launches a few hundred
kernels per forward). :class:`StepGraphs` captures :meth:`~omnistudio.engine.static_step.StepPlan.step`
once per :class:`~omnistudio.engine.static_step.StepShape` with ``torch.cuda.CUDAGraph`` and replays it:
one launch per step. The plan's buffers are the graph's inputs and outputs (copied in between sentences,
read and written in place by the replay). All graphs share one memory pool: one replays at a time, and
what a graph keeps between replays lives in its plan's buffers, not in the pool.

Capture runs the step once eagerly on a side stream (lazy initialisation: cuBLAS workspaces, kernel
loading), then once under capture, on a dummy state of the plan (nothing to unmask). The backbone is
called through ``forward`` while captured, so Python hooks (the cancel hook, the benches' step timers)
do not run inside the graph: :meth:`StepGraphs.replay` calls the backbone's forward pre-hooks itself
before each replay, as the module would.

``prepare`` captures every shape a session can meet (each batch size and length bucket up to a
longest row) during the engine's warm-up, so no sentence pays for a capture; a shape met later is
captured on first use. A shape whose capture fails runs eagerly from then on (logged once). The
seconds spent capturing are kept for the telemetry, ``/health`` and the bench.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import torch

from omnistudio.errors import describe

if TYPE_CHECKING:
    from collections.abc import Hashable


class StepPlan(Protocol):
    """What a captured step is made of (:class:`~omnistudio.engine.static_step.StepPlan`)."""

    hooks_outside: bool

    @property
    def shape(self) -> Hashable: ...

    sampler: Any  # its model's backbone (``sampler.model.llm``) carries the hooks

    def load_dummy(self) -> None: ...

    def step(self) -> None: ...

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GraphStatus:
    """How many step graphs are captured, and how long capturing took (telemetry, /health, the bench)."""

    captured: int = 0
    capture_s: float = 0.0
    failed: int = 0

    def describe(self) -> str:
        if not self.captured and not self.failed:
            return "off"
        text = f"{self.captured} captured in {self.capture_s:.1f} s"
        return text + (f", {self.failed} eager (capture failed)" if self.failed else "")


def available(device: torch.device | str) -> bool:
    """Whether graphs can be captured for ``device`` (CUDA only)."""
    return str(device).startswith("cuda") and torch.cuda.is_available()


class StepGraphs:
    """Captured step graphs, one per shape, sharing one memory pool."""

    def __init__(self, device: torch.device | str) -> None:
        self.device = torch.device(device)
        self.pool = torch.cuda.graph_pool_handle()
        self.graphs: dict[Hashable, torch.cuda.CUDAGraph] = {}
        self.failed: set[Hashable] = set()
        self.capture_s = 0.0

    @property
    def status(self) -> GraphStatus:
        return GraphStatus(len(self.graphs), self.capture_s, len(self.failed))

    def graph(self, plan: StepPlan) -> torch.cuda.CUDAGraph | None:
        """The graph of ``plan``'s shape, captured now if it has none yet (None: that shape runs eagerly)."""
        shape = plan.shape
        if shape in self.graphs:
            return self.graphs[shape]
        if shape in self.failed:
            return None
        started = time.perf_counter()
        try:
            graph = self._capture(plan)
        except Exception as exc:  # noqa: BLE001 - an op that cannot be captured: that shape stays eager
            self.failed.add(shape)
            plan.hooks_outside = False
            log.warning("step graph %s could not be captured (%s): that shape runs eagerly", shape, describe(exc))
            return None
        finally:
            self.capture_s += time.perf_counter() - started
        self.graphs[shape] = graph
        return graph

    def _capture(self, plan: StepPlan) -> torch.cuda.CUDAGraph:
        plan.hooks_outside = True
        plan.load_dummy()
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            plan.step()  # lazy initialisation before capture
        torch.cuda.current_stream(self.device).wait_stream(side)
        plan.load_dummy()
        graph = torch.cuda.CUDAGraph()
        # thread_local: the decode lane's thread may launch the vocoder on its own stream meanwhile
        with torch.cuda.graph(graph, pool=self.pool, capture_error_mode="thread_local"):
            plan.step()
        torch.cuda.current_stream(self.device).synchronize()
        return graph

    def replay(self, plan: StepPlan, graph: torch.cuda.CUDAGraph) -> None:
        """One step: the backbone's forward pre-hooks (Python, outside the graph), then the replay."""
        llm = plan.sampler.model.llm
        for hook in list(llm._forward_pre_hooks.values()):
            hook(llm, ())
        graph.replay()

    def prepare(self, plans: Iterable[StepPlan]) -> GraphStatus:
        """Capture every plan's graph now (warm-up): no sentence of these shapes pays for a capture."""
        for plan in plans:
            self.graph(plan)
        return self.status
