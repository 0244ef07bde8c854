"""The fastest CPU path for this machine, chosen by measurement (issue 52).

A CPU path is the backbone's dtype (``fp32``, or ``bf16`` where the CPU has native bf16) and whether its
linear layers are int8 (only where the user allows it: ``--quantize auto``; int8 stays opt-in while its
quality on the real weights cannot be measured). At the first start of a model on a CPU, with ``--dtype
auto`` (the default) or ``--quantize auto``, :func:`stored_or_calibrated` loads each candidate not yet timed and times a few
diffusion steps of one sentence (:func:`time_steps`), and the fastest is used from then on: the choice is
kept in the cache folder (``calibration.json``), keyed by the CPU (model name, the flags that matter, torch's
version, the thread count) and the model, so a new CPU, another torch or another thread count calibrates
again. ``--dtype``/``--quantize`` given (flags, studio settings, a server's) pin the path: nothing is measured.

``tiny`` (the test and demo checkpoint) is never calibrated unless asked (``OMNISTUDIO_CALIBRATE=1``): its
steps take milliseconds, and the static rule (bf16 where native, else fp32) stands in. Same path, same
tokens: a path is a configuration of the reproducibility contract (README).
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from omnistudio.commit import write_json
from omnistudio.config import locations
from omnistudio.engine.cpuinfo import cpuinfo_field
from omnistudio.engine.reference_voice import reference_prompt
from omnistudio.errors import UserError

log = logging.getLogger("omnistudio.engine")
STEPS = 4  # diffusion steps timed per candidate (the first, untimed, warms the kernels)
TEXT = "The markets closed higher today, led by energy and the banks."
RELEVANT_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_int8", "amx_tile")


@dataclass(frozen=True)
class CpuPath:
    """How the backbone runs on the CPU: its dtype and whether its linear layers are int8."""

    dtype: str  # fp32 | bf16
    quantize: str = "none"  # none | int8

    @property
    def label(self) -> str:
        return self.dtype + (" + int8" if self.quantize == "int8" else "")


@dataclass(frozen=True)
class Calibration:
    """A calibration's result: the path chosen for ``model`` on ``cpu``, and each candidate's ms per step."""

    cpu: str
    model: str
    chosen: CpuPath
    step_ms: dict[str, float] = field(default_factory=dict)  # label -> median ms per diffusion step
    when: str = ""

    def describe(self) -> str:
        """One line for logs, /health, the sidecar and the studio's telemetry."""
        timed = ", ".join(f"{label} {ms:.1f}" for label, ms in sorted(self.step_ms.items(), key=lambda kv: kv[1]))
        return f"calibrated on this CPU: {self.chosen.label} fastest ({timed} ms/step)"


def calibrates(model: str) -> bool:
    """Whether an automatic path calibrates for ``model``: ``OMNISTUDIO_CALIBRATE`` (1/0) if set, else every
    model but ``tiny``."""
    value = os.environ.get("OMNISTUDIO_CALIBRATE", "").strip().lower()
    if value:
        return value in ("1", "on", "true", "yes")
    return model != "tiny"


def candidates(bf16_native: bool, int8_ok: bool, dtype: str = "auto", quantize: str = "none") -> list[CpuPath]:
    """The paths worth timing: ``dtype`` if pinned, else fp32 and bf16 where it is native (emulated bf16 is
    several times slower); ``quantize`` if pinned, else (``auto``) without int8 and, where the CPU has int8
    units, with it."""
    dtypes = [dtype] if dtype != "auto" else ["fp32", "bf16"] if bf16_native else ["fp32"]
    quants = [quantize] if quantize != "auto" else ["none", "int8"] if int8_ok else ["none"]
    return [CpuPath(d, q) for q in quants for d in dtypes]


def pick(paths: Sequence[CpuPath], time_step: Callable[[CpuPath], float]) -> tuple[CpuPath, dict[str, float]]:
    """The fastest of ``paths`` by ``time_step`` (seconds per diffusion step) and each one's ms per step;
    a tie goes to the earlier (the simpler) path."""
    if not paths:
        raise UserError("no CPU path to calibrate")
    timed = {path.label: time_step(path) * 1e3 for path in paths}
    best = min(paths, key=lambda p: timed[p.label])
    return best, {label: round(ms, 3) for label, ms in timed.items()}


def cpu_key(threads: int, flags: frozenset[str] | set[str], torch_version: str) -> str:
    """What a calibration holds for: the CPU's model name and the flags that matter, torch, the threads."""
    name = cpuinfo_field("model name") or "unknown CPU"
    relevant = " ".join(f for f in RELEVANT_FLAGS if f in flags)
    return f"{name} [{relevant}] torch {torch_version} threads {threads}"


def store_path() -> Path:
    return locations().cache / "calibration.json"


def _entry_key(cpu: str, model: str) -> str:
    return hashlib.sha256(f"{cpu}\n{model}".encode()).hexdigest()[:16]


def load(cpu: str, model: str, path: Path | None = None) -> Calibration | None:
    """The stored calibration of ``model`` on ``cpu``, or None (none yet, or a file that cannot be read:
    then it is calibrated again and rewritten)."""
    entries = _entries(path or store_path())
    raw = entries.get(_entry_key(cpu, model))
    if not isinstance(raw, dict):
        return None
    try:
        chosen = raw["chosen"]
        return Calibration(str(raw["cpu"]), str(raw["model"]), CpuPath(str(chosen["dtype"]), str(chosen["quantize"])),
                           {str(k): float(v) for k, v in dict(raw.get("step_ms", {})).items()}, str(raw.get("when", "")))
    except (KeyError, TypeError, ValueError):
        return None


def save(calibration: Calibration, path: Path | None = None) -> None:
    """Keep ``calibration`` beside the others (atomically)."""
    target = path or store_path()
    entries = _entries(target)
    entries[_entry_key(calibration.cpu, calibration.model)] = asdict(calibration)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_json(target, entries)


def _entries(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def time_steps(load: Callable[[CpuPath], Any], path: CpuPath, steps: int = STEPS) -> float:
    """Seconds per diffusion step of ``path``'s engine (``load(path)``): one sentence rendered at ``steps``
    steps with the fast sampler, the benches' synthetic voice, the first step left out (warm-up)."""
    engine = load(path)
    prompt = reference_prompt(engine)
    marks: list[float] = []
    hook = engine.model.llm.register_forward_pre_hook(lambda *_: marks.append(time.perf_counter()))
    try:
        engine.render_tokens([TEXT], [prompt], ["en"], num_step=steps, seeds=[1])
        marks.append(time.perf_counter())
    finally:
        hook.remove()
    spans = [b - a for a, b in zip(marks[:-1], marks[1:])][1:]  # the first step warms the kernels
    return statistics.median(spans) if spans else float("inf")


def stored_or_calibrated(cpu: str, model: str, paths: Sequence[CpuPath], time_step: Callable[[CpuPath], float],
                         progress: Callable[[str], None] | None = None) -> Calibration:
    """The fastest of ``paths`` on ``cpu`` for ``model``: from the stored timings where they cover every path,
    else the missing ones are timed now and kept beside the others (``--quantize auto`` and ``none`` share
    one entry: each switch times nothing it already knows). A path that cannot be loaded here (out of
    memory, say) is logged and never chosen."""
    stored = load(cpu, model)
    known = dict(stored.step_ms) if stored is not None else {}
    missing = [p for p in paths if p.label not in known]

    def timed(path: CpuPath) -> float:
        if progress is not None:
            progress(f"calibrating the CPU path: timing {path.label}")
        try:
            return time_step(path)
        except (Exception, MemoryError) as exc:  # noqa: BLE001 - that path is out; the others stand
            log.warning("calibration: %s could not be timed here (%s)", path.label, exc)
            return float("inf")
        finally:
            gc.collect()  # the candidate's engine goes before the next one loads

    if missing:
        _, step_ms = pick(missing, timed)
        known.update(step_ms)
    chosen = min(paths, key=lambda p: known[p.label])
    result = Calibration(cpu, model, chosen, {p.label: known[p.label] for p in paths},
                         stored.when if stored is not None and not missing else time.strftime("%Y-%m-%dT%H:%M:%S"))
    if missing:
        save(Calibration(cpu, model, chosen, known, result.when))
        log.info("%s", result.describe())
    return result
