"""Where a figure was measured: commit, machine (CPU model, cores, GPU) and load average.

Every bench mode's output carries :func:`provenance` as its ``provenance`` field (JSON) and
:func:`provenance_line` as a printed line, so a figure copied into docs/benchmarks.md names them.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import TypedDict

from omnistudio.engine.cpuinfo import cpuinfo_field

ROOT = Path(__file__).resolve().parents[2]


def _commit() -> str:
    """The short commit of the source tree this runs from, ``+dirty`` with uncommitted changes; "unknown"
    outside a git checkout."""
    try:
        sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return sha + ("+dirty" if dirty else "") if sha else "unknown"


def _cpu_model() -> str:
    return cpuinfo_field("model name") or platform.processor() or platform.machine() or "unknown"


def _gpu() -> str | None:
    """The CUDA device's name when torch is already loaded and sees one (a bench never loads torch for this)."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return f"{torch.cuda.get_device_name(0)} x {torch.cuda.device_count()}"
    except Exception:  # noqa: BLE001 - a broken driver: no GPU to name
        return None
    return None


class Provenance(TypedDict):
    """Where a figure was measured (the ``provenance`` field of every bench output)."""

    commit: str
    date: str
    cpu: str
    cores: int | None
    gpu: str | None
    load: list[float]


def provenance() -> Provenance:
    """commit, date (UTC), cpu, cores, gpu (None without one) and load (1, 5, 15-minute averages), now."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = []
    return {"commit": _commit(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "cpu": _cpu_model(), "cores": os.cpu_count(), "gpu": _gpu(), "load": load}


def provenance_line(p: Provenance) -> str:
    load = " ".join(f"{x:.2f}" for x in p.get("load") or []) or "unknown"
    return (f"measured at commit {p['commit']}, {p['date']}, on {p['cpu']} ({p['cores']} cores), "
            f"GPU {p['gpu'] or 'none'}; load average {load}")
