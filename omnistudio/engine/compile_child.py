"""``python -m omnistudio.engine.compile_child JOB``: fill a compiled backbone's cache slot, then exit.

Started by :func:`omnistudio.engine.compiled_backbone.build_in_child` on a first start, so the
compilation runs in its own process (at a lower priority) while the parent's eager backbone serves.
``JOB`` is JSON: the checkpoint directory, device, dtype, the cache root, the slot folder and its key
(the parent's), the mode. The child takes the slot's lock first and exits at once when the slot is warm
by then (another start's child filled it); otherwise it loads the model and computes the slot's key
from what it loaded, which equals the parent's for the same checkpoint (content fingerprint), dtype,
device, torch and CPU.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from omnistudio.engine.compile_cache import CacheKey, CompileSlot, cache_key
from omnistudio.engine.compiled_backbone import CompiledBackbone
from omnistudio.locks import exclusive


def main(argv: list[str]) -> int:
    job = json.loads(argv[1])
    if hasattr(os, "nice"):
        os.nice(10)  # the parent's requests first
    asked = CompileSlot(Path(job["slot"]), CacheKey(**job["key"]))
    with exclusive(asked.lock_file):  # one compile per slot: a second first start's child waits here
        if asked.state() == "warm":
            print(f"compile cache {asked.folder} was filled by another process", flush=True)
            return 0
        return compile_into(job)


def compile_into(job: dict[str, Any]) -> int:
    # lazy: start-up (numpy, torch)
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.sampler import FastSampler

    quantize = {"quantize": job["quantize"]} if job.get("quantize", "none") != "none" else {}
    engine = Engine.load(job["model"], device=job["device"], dtype=job["dtype"], **quantize)
    FastSampler(engine.model)  # the backbone's attention as the parent's fast sampler sets it
    slot = CompileSlot(Path(job["slot"]), cache_key(engine.loaded, job["mode"]))
    backbone = CompiledBackbone(engine, Path(job["root"]), job["mode"], slot=slot).start(background=False)
    if backbone.state != "compiled":
        print(backbone.detail, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
