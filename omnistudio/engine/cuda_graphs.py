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

A graph is keyed on structure only (:class:`~omnistudio.engine.static_step.StepShape`: rows, length,
batch, frames, and whether guidance and each noise are on): the guidance scale, the temperatures and
the layer penalty are 0-dim device tensors of the plan, filled before the replay, so a request with
another value replays the same graph.

``prepare`` captures every shape a session can meet (each batch size the server can form and each
length bucket up to a longest row) during the engine's warm-up and replays each graph once right
after its capture (the first replay's own costs paid there), so no sentence pays for a capture; a
shape met later is captured on first use. The graphs are bounded (``capacity``, least recently used
dropped past it, with their plans). A shape whose capture fails runs eagerly from then on: counted
(``GraphStatus.failed``), logged once, shown in ``/health`` and the telemetry, and a bench that meets
one exits non-zero. The count, the seconds spent capturing and the memory of the graphs' pool are
kept for the telemetry, ``/health`` and the bench.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import torch

from omnistudio.engine.step_backbone import call_pre_hooks
from omnistudio.errors import describe

if TYPE_CHECKING:
    from collections.abc import Hashable


class CapturableStep(Protocol):
    """What a captured step is made of (:class:`~omnistudio.engine.static_step.StepPlan`)."""

    hooks_outside: bool

    @property
    def shape(self) -> Hashable: ...

    @property
    def backbone_module(self) -> torch.nn.Module: ...  # the backbone whose pre-hooks run outside the graph

    def load_dummy(self) -> None: ...

    def step(self) -> None: ...

    def backbone_inputs(self) -> dict[str, Any]: ...

log = logging.getLogger(__name__)

GRAPHS_KEPT = 128  # graphs (and plans) kept: every batch bucket of a 16-item server (5) at every length bucket
# (20) is 100; past this the least recently used is dropped


@dataclass(frozen=True)
class GraphStatus:
    """The step graphs held, how long capturing took, their pool's memory, the captures that failed
    (those shapes run eagerly) and the graphs dropped past the bound (telemetry, /health, the bench)."""

    captured: int = 0
    capture_s: float = 0.0
    failed: int = 0
    memory_mb: float = 0.0
    evicted: int = 0
    capacity: int = 0

    def describe(self) -> str:
        if not self.captured and not self.failed:
            return "off"
        text = f"{self.captured} captured in {self.capture_s:.1f} s, {self.memory_mb:.0f} MB"
        if self.failed:
            text += f", {self.failed} eager (capture failed)"
        if self.evicted:
            text += f", {self.evicted} dropped (bound {self.capacity})"
        return text


def available(device: torch.device | str) -> bool:
    """Whether graphs can be captured for ``device`` (CUDA only)."""
    return str(device).startswith("cuda") and torch.cuda.is_available()


class StepGraphs:
    """Captured step graphs, one per shape, sharing one memory pool, the least recently used dropped
    past ``capacity``."""

    def __init__(self, device: torch.device | str, capacity: int = GRAPHS_KEPT) -> None:
        self.device = torch.device(device)
        self.capacity = max(1, int(capacity))
        self.pool: Any = None  # the graphs' shared memory pool (made at the first capture)
        self.graphs: OrderedDict[Hashable, Any] = OrderedDict()
        self.failed: set[Hashable] = set()
        self.capture_s = 0.0
        self.evicted = 0
        self.memory_bytes = 0
        self._reserved_growth = 0  # what the captures added to the allocator's reserve (where no snapshot)

    @property
    def status(self) -> GraphStatus:
        return GraphStatus(len(self.graphs), self.capture_s, len(self.failed), round(self.memory_bytes / 2**20, 1),
                           self.evicted, self.capacity)

    def has(self, shape: Hashable) -> bool:
        """Whether ``shape`` has a graph, or is known to run eagerly (no capture to come)."""
        return shape in self.graphs or shape in self.failed

    def graph(self, plan: CapturableStep) -> Any:
        """The graph of ``plan``'s shape, captured now (and replayed once) if it has none yet (None: that
        shape runs eagerly)."""
        shape = plan.shape
        if shape in self.graphs:
            self.graphs.move_to_end(shape)
            return self.graphs[shape]
        if shape in self.failed:
            return None
        started = time.perf_counter()
        try:
            graph = self._capture(plan)
            graph.replay()  # once right after capture, on the dummy state: the first replay's costs paid here
            plan.load_dummy()
        except Exception as exc:  # noqa: BLE001 - an op that cannot be captured: that shape stays eager
            self.failed.add(shape)
            plan.hooks_outside = False
            log.warning("step graph %s could not be captured (%s): that shape runs eagerly", shape, describe(exc))
            return None
        finally:
            self.capture_s += time.perf_counter() - started
        self.graphs[shape] = graph
        while len(self.graphs) > self.capacity:
            self.drop(next(iter(self.graphs)))
        self.memory_bytes = self._memory_bytes()
        return graph

    def drop(self, shape: Hashable) -> None:
        """Forget ``shape``'s graph (its plan was dropped, or past the bound)."""
        graph = self.graphs.pop(shape, None)
        if graph is None:
            return
        self.evicted += 1
        reset = getattr(graph, "reset", None)
        if reset is not None:
            reset()

    def _memory_bytes(self) -> int:
        """The graphs' pool: its segments in the allocator's snapshot, else what the captures reserved."""
        if self.pool is None:
            return 0
        try:
            pool = tuple(self.pool)
            held = sum(int(seg.get("total_size", 0)) for seg in torch.cuda.memory_snapshot()
                       if tuple(seg.get("segment_pool_id", ()) or ()) == pool)
        except Exception:  # noqa: BLE001 - no snapshot on this build: the reserve's growth instead
            held = 0
        return held or self._reserved_growth

    def _capture(self, plan: CapturableStep) -> Any:
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        reserved = torch.cuda.memory_reserved(self.device)
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
        self._reserved_growth += max(0, torch.cuda.memory_reserved(self.device) - reserved)
        return graph

    def replay(self, plan: CapturableStep, graph: Any) -> None:
        """One step: the backbone's forward pre-hooks (Python, outside the graph), then the replay."""

        call_pre_hooks(plan.backbone_module, plan.backbone_inputs())
        graph.replay()

    def prepare(self, plans: Iterable[CapturableStep]) -> GraphStatus:
        """Capture every plan's graph now (warm-up): no sentence of these shapes pays for a capture."""
        for plan in plans:
            self.graph(plan)
        return self.status
