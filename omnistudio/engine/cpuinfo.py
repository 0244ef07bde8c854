"""``/proc/cpuinfo`` read once for what the engine and the benches ask of it: the CPU's model name and its
feature flags (no torch: the benches' provenance reads it too)."""

from __future__ import annotations

from pathlib import Path


def cpuinfo_field(name: str) -> str | None:
    """The first ``name : value`` line's value in ``/proc/cpuinfo`` (``"model name"``, ``"flags"``), or None
    where there is no such file or line."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(name):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpuinfo_flags() -> frozenset[str]:
    """The CPU's feature flags as ``/proc/cpuinfo`` lists them (empty where it does not)."""
    return frozenset((cpuinfo_field("flags") or "").split())
