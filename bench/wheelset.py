"""Which wheels bench/gpu-wheels.sh carries to the GPU machine: ``python bench/wheelset.py REPORT IMPORTED
[IMAGE]`` prints ``name==version`` lines.

- REPORT: pip's ``--report`` of the project's own requirements (pyproject.toml) resolved together for the
  image's Python (``pip install --dry-run --python-version 3.12 --platform manylinux... --only-binary=:all:``):
  the dependency closure, one version each, with the target's marker environment.
- IMPORTED: the distributions the steps import (``bench/preflight.py --distributions``), one a line: the set
  is the closure's versions of these, so a distribution declared but never imported (omnivoice's gradio and
  librosa: over 150 MiB with their own requirements) stays out. The preflight on the GPU imports the same
  modules, so a gap is its one line there, not a failure mid-step.
- IMAGE (optional): what the image has, one distribution a line (``pip list --format=freeze`` of the image,
  which gpu.sh writes beside its results; versions are ignored).

Left out as the image's: torch and torchaudio and everything they require (triton, nvidia-*, sympy...), then
what IMAGE lists. Needs only pip (its vendored ``packaging`` reads the requirements and their markers).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable

from pip._vendor.packaging.requirements import Requirement

TORCH_STACK = ("torch", "torchaudio")  # the image's; what they require comes with them


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requires(item: dict[str, object], environment: dict[str, str]) -> list[str]:
    metadata = item["metadata"]
    assert isinstance(metadata, dict)
    names = []
    for text in metadata.get("requires_dist") or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({**environment, "extra": ""}):
            names.append(canonical(req.name))
    return names


def closure(roots: Iterable[str], graph: dict[str, list[str]]) -> set[str]:
    seen: set[str] = set()
    stack = [canonical(r) for r in roots]
    while stack:
        name = stack.pop()
        if name in seen or name not in graph:
            continue
        seen.add(name)
        stack.extend(graph[name])
    return seen


def select(report: dict[str, object], imported: Iterable[str], image: Iterable[str] = ()) -> list[str]:
    """``name==version`` of each wheel to carry, sorted."""
    install = report["install"]
    environment = report.get("environment") or {}
    assert isinstance(install, list) and isinstance(environment, dict)
    items = {canonical(item["metadata"]["name"]): item for item in install}
    graph = {name: _requires(item, environment) for name, item in items.items()}
    wanted = {canonical(name) for name in imported} & set(items)
    has = closure(TORCH_STACK, graph) | set(TORCH_STACK) | {canonical(line.split("==")[0]) for line in image
                                                            if line.strip() and not line.startswith("#")}
    return sorted(f"{items[name]['metadata']['name']}=={items[name]['metadata']['version']}"
                  for name in wanted - has)


def main(argv: list[str]) -> int:
    report = json.loads(open(argv[0], encoding="utf-8").read())
    imported = open(argv[1], encoding="utf-8").read().split()
    image = open(argv[2], encoding="utf-8").read().splitlines() if len(argv) > 2 else []
    print("\n".join(select(report, imported, image)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
