"""The studio's first F5 on a fresh home, with and without the background prompt builds (issue 28).

    python -m omnistudio.bench.prebuild --model tiny

The studio's controller (no UI, a virtual audio device) plays the example script; each run gets an empty
prompt folder (a temporary ``OMNISTUDIO_HOME`` for the prompts; the model is loaded once) and an engine with
empty caches. "asked at once": F5 before anything was built (the background builds off), so the take's
prepare builds the first voice. "after idle": the studio idles until its background builds are done (waited
on their state), then F5; then a second F5 (the take cache, seed locked). Prints one JSON object with its
``provenance``; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from omnistudio.bench.provenance import provenance
from omnistudio.engine.settings import EngineConfig
from omnistudio.flags.engine import add_model_options
from omnistudio.studio import events as ev
from omnistudio.studio.settings import StudioSettings

if TYPE_CHECKING:
    from omnistudio.studio.controller import Studio


def _until(predicate: Callable[[], bool], what: str, limit_s: float = 900.0) -> None:
    deadline = time.monotonic() + limit_s
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what}")
        time.sleep(0.01)


def _play(studio: Studio, events: list[object], text: str) -> dict[str, object]:
    del events[:]
    studio.play(text)
    _until(lambda: any(isinstance(e, ev.PlaybackFinished) for e in events), "the take")
    started = next(e for e in events if isinstance(e, ev.PlaybackStarted))
    actions = [e.action for e in events if isinstance(e, ev.Preparing) and e.action != "done"]
    return {"ttfa_s": round(started.ttfa_s, 3), "prepare_actions": actions}


def run(model: str = "tiny", device: str | None = None, dtype: str | None = None) -> dict[str, object]:
    # lazy: start-up (concurrent, numpy, pyebur128, scipy, torch, urllib)
    import torch

    # lazy: start-up (concurrent, numpy, pyebur128, scipy, urllib)
    from omnistudio.engine.engine import Engine
    from omnistudio.studio.controller import Studio
    from omnistudio.studio.welcome import EXAMPLE_SCRIPT
    from omnistudio.voices.session import open_engine

    torch.set_num_threads(1)
    loaded = open_engine(EngineConfig(model, device, dtype, sampler="fast"))
    home = os.environ.get("OMNISTUDIO_HOME")
    out: dict[str, object] = {"model": model, "device": loaded.loaded.device, "script": "the studio's example"}
    try:
        for background in (False, True):
            os.environ["OMNISTUDIO_HOME"] = tempfile.mkdtemp(prefix="omnistudio-prebuild-")
            events: list[object] = []
            studio = Studio(engine=Engine(loaded.loaded, sampler=loaded.sampler), warm=False, audio="virtual",
                            virtual_rate=50.0, report=events.append, settings=StudioSettings(anchor="ruby")).start()
            try:
                _until(lambda: studio.state == "ready", "the studio")  # noqa: B023
                studio.prebuild.enabled = background
                if background:
                    started = time.perf_counter()
                    studio.prebuild.script(EXAMPLE_SCRIPT)
                    _until(lambda: len(studio.prebuild.wanted()) == 3 and studio.prebuild.settled(),  # noqa: B023
                           "the background builds")
                    out["background_builds_s"] = round(time.perf_counter() - started, 3)
                    out["after_idle"] = _play(studio, events, EXAMPLE_SCRIPT)
                    out["second_f5"] = _play(studio, events, EXAMPLE_SCRIPT)
                else:
                    out["asked_at_once"] = _play(studio, events, EXAMPLE_SCRIPT)
            finally:
                studio.close()
    finally:
        if home is None:
            os.environ.pop("OMNISTUDIO_HOME", None)
        else:
            os.environ["OMNISTUDIO_HOME"] = home
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnistudio.bench.prebuild",
                                     description=(__doc__ or "").splitlines()[0])
    add_model_options(parser)
    parser.set_defaults(model="tiny")
    args = parser.parse_args(argv)
    print(json.dumps({**run(args.model, args.device, args.dtype), "provenance": provenance()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
