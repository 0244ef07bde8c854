"""The persistent compiled backbone: compiled once, in the background, then loaded from the cache.

:class:`CompiledBackbone` compiles ``model.llm.forward`` with inductor (dynamic shapes) and installs
it as the backbone's ``forward``: the module is still called the normal way, so its hooks (the cancel
hook, the benches' step timers) stay plain Python around the compiled graph. The graph is run on the
shapes the fast sampler gives the backbone (one row: a sentence alone; two: a batch; a row count of 1
is a graph of its own), so no request pays for a compilation.

- First start (a cold or stale cache slot, see :mod:`omnistudio.engine.compile_cache`): ``start``
  returns at once; a child process (``python -m omnistudio.engine.compile_child``, at a lower
  priority) loads the same checkpoint, compiles and fills the cache while this process's eager
  backbone serves requests. Not a thread: torch's "compiling" flag is process-wide
  (``torch.compiler.is_compiling()`` turns true in every thread while one compiles), which sends a
  concurrent eager forward down compile-only paths (transformers' kernel hub keeps a shared global
  for them: measured here, a dynamo guard failure). When the child is done, the graph is built from
  the warm cache here.
- Later starts (a warm slot): the artifacts are loaded and the graph built from torch's caches before
  ``start`` returns (seconds instead of minutes), so the engine is ready with the compiled backbone.
- Building the graph here and the switch hold the engine's lock, which every diffusion pass holds from
  its first step to its last: a sentence (a batch group) runs wholly eager or wholly compiled. The
  build takes seconds (15-22 s on ``mid``), during which requests wait: state ``switching``.
- A compilation that fails leaves the backbone eager (state ``failed``, the reason logged) and marks the
  slot failed, so later starts under the same key stay eager at once instead of failing again.
- The child runs in a session of its own, its output in the slot's ``compile.log``: Ctrl+C on the
  studio or the server does not reach it, and a process that ends while its child compiles (the studio
  closed during the first start) leaves the child to finish: it fills the cache, so the next start is
  warm. The child holds the slot's lock while it compiles; a second first start's child waits for it
  and finds the slot warm.

``state``: ``off`` (not asked), ``compiling`` (eager serving, the compile running), ``switching``
(the graph being built here, requests waiting), ``compiled``, ``failed``; the link's info carries it to
``/health`` and the studio's telemetry.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Literal

from omnistudio.engine.compile_cache import CompileSlot, compile_root, use_inductor_folder
from omnistudio.errors import describe

if TYPE_CHECKING:
    from pathlib import Path

    import torch

    from omnistudio.engine.engine import Engine

log = logging.getLogger(__name__)

CompileState = Literal["off", "compiling", "switching", "compiled", "failed"]
TRIAL_ROWS = (1, 2)  # one row (a sentence alone, the packed layout) and a batch: 1 is its own graph
TRIAL_LENGTH = 24


class CompiledBackbone:
    """The compiled backbone of one engine.

    ``build`` fills a cold cache slot (default: :func:`build_in_child`); ``before_switch`` (tests) runs on
    the compile thread once the cache is filled, before the switch waits for the engine's lock."""

    def __init__(self, engine: Engine, root: Path | None = None, mode: str = "default",
                 build: Callable[[CompiledBackbone], None] | None = None,
                 before_switch: Callable[[], None] | None = None, slot: CompileSlot | None = None) -> None:
        self.engine = engine
        self.root = root if root is not None else compile_root()
        self.mode = mode
        self.build = build or build_in_child
        self.before_switch = before_switch
        self.slot = slot or CompileSlot.for_model(self.root, engine.loaded, mode)
        self.state: CompileState = "off"
        self.detail = ""
        self.source = ""  # cache: built from a warm slot; fresh: compiled (and saved) by this process
        self.build_s = 0.0  # filling a cold slot (the child process)
        self.compile_s = 0.0  # building the graph here (from the warm cache, or from nothing)
        self.switched_at: int | None = None  # the engine's diffusion passes run before the switch
        self.done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, background: bool = True) -> CompiledBackbone:
        """Build from a warm slot now; a cold one in the background (``background``) or here, now."""
        self.engine.compiled = self
        self.state = "compiling"
        use_inductor_folder(self.root)
        if self.slot.state() == "stale":
            log.info("compile cache %s was made for another torch, model or dtype: rebuilding", self.slot.folder)
            self.slot.discard()
        failed = self.slot.failed()
        if failed is not None:
            self.state = "failed"
            self.detail = (f"compiling failed before under this torch and model ({failed}); "
                           f"remove {self.slot.failed_file} to try again")
            log.warning("backbone stays eager: %s", self.detail)
            self.done.set()
            return self
        if self.slot.state() == "warm" or not background:
            self._finish(self._here)
        else:
            self._thread = threading.Thread(target=self._finish, args=(self._fill_then_here,),
                                            name="omnistudio-compile", daemon=True)
            self._thread.start()
        return self

    def wait(self, timeout: float | None = None) -> bool:
        return self.done.wait(timeout)

    # ------------------------------------------------------------------ work
    def _finish(self, work: Callable[[], None]) -> None:
        try:
            work()
            self.state = "compiled"
            log.info("backbone compiled (%s): %.1f s here, %.1f s in the child", self.source, self.compile_s,
                     self.build_s)
        except Exception as exc:  # any compiler failure: stay eager, never break synthesis
            self.state, self.detail = "failed", describe(exc)
            log.warning("compiling the backbone failed, staying eager: %s", self.detail)
        finally:
            self.done.set()

    def _fill_then_here(self) -> None:
        started = time.perf_counter()
        self.build(self)
        self.build_s = time.perf_counter() - started
        if self.slot.state() != "warm":
            raise RuntimeError(f"the compile left no artifacts in {self.slot.folder}")
        if self.before_switch is not None:
            self.before_switch()
        self._here()

    def _here(self) -> None:
        """Build the graph in this process and install it, under the engine's lock (between passes)."""
        loaded = self.slot.load()
        self.source = "cache" if loaded else "fresh"
        self.state = "switching"
        with self.engine._lock:
            started = time.perf_counter()
            try:
                forward = self._compile()
            except Exception as exc:
                self.slot.mark_failed(describe(exc))
                raise
            self.compile_s = time.perf_counter() - started
            self.engine.model.llm.forward = forward
            self.switched_at = self.engine.passes
        if not loaded:
            try:
                self.slot.save()
            except Exception as exc:  # compiled all the same: only the next start pays again
                self.detail = f"compiled; not saved to the cache: {describe(exc)}"
                log.warning("compile cache %s not saved: %s", self.slot.folder, self.detail)

    def _compile(self) -> Callable[..., Any]:
        """The compiled forward, run on every trial shape (every graph built before the switch)."""
        # lazy: start-up (torch)
        import torch

        model = self.engine.model
        forward = torch.compile(model.llm.forward, mode=self.mode, dynamic=True)
        hidden = int(model.config.llm_config.hidden_size)
        dtype = next(model.llm.parameters()).dtype
        with torch.inference_mode():
            for rows in TRIAL_ROWS:
                forward(**trial_inputs(rows, TRIAL_LENGTH, hidden, dtype, model.device))
        return forward


def build_in_child(backbone: CompiledBackbone) -> None:
    """Fill ``backbone``'s cache slot from a child process on the same checkpoint, dtype and device: in a
    session of its own (a Ctrl+C on this process's terminal does not reach it), its output in the
    slot's log file."""

    loaded = backbone.engine.loaded
    job = {"model": str(loaded.path), "device": str(loaded.device), "dtype": loaded.dtype_name,
           "quantize": str(getattr(loaded, "quantize", "none")), "key": asdict(backbone.slot.key),
           "root": str(backbone.root), "slot": str(backbone.slot.folder), "mode": backbone.mode}
    backbone.slot.folder.mkdir(parents=True, exist_ok=True)
    with open(backbone.slot.log_file, "a", encoding="utf-8") as out:  # appended: a second start's child too
        out.write(f"--- compile child started {time.strftime('%Y-%m-%d %H:%M:%S')} by pid {os.getpid()}\n")
        out.flush()
        code = subprocess.run([sys.executable, "-m", "omnistudio.engine.compile_child", json.dumps(job)],
                              stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, check=False,
                              start_new_session=True).returncode
    if code != 0:
        lines = backbone.slot.log_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        raise RuntimeError(f"the compile process failed ({code}): {lines[-1] if lines else 'no output'} "
                           f"(log: {backbone.slot.log_file})")


def trial_inputs(rows: int, length: int, hidden: int, dtype: torch.dtype, device: Any) -> dict[str, object]:
    """Backbone inputs shaped as the fast sampler's packed layout makes them (embeddings, a 4-D bool mask,
    positions): the graph a trial builds is the one the sampler's calls find."""
    # lazy: start-up (torch)
    import torch

    return {"inputs_embeds": torch.zeros((rows, length, hidden), dtype=dtype, device=device),
            "attention_mask": torch.ones((rows, 1, length, length), dtype=torch.bool, device=device),
            "position_ids": torch.arange(length, device=device).repeat(rows, 1), "return_dict": True}


def is_compiled(model: Any) -> bool:
    """Whether ``model``'s backbone runs a compiled forward right now."""
    return "forward" in vars(model.llm)
