"""The real studio on `--model tiny`: an interactive screen well within 5 s, the engine ready after."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from studio_support import wait_for


def test_studio_is_interactive_before_the_engine_is_ready(tiny_engine, tmp_path: Path) -> None:
    # A fresh interpreter pays the imports a user pays (the checkpoint exists: tiny_engine built it).
    code = ("import time; t = time.perf_counter(); import omnistudio.app, omnistudio.studio.controller; "
            "print(time.perf_counter() - t)")
    import_s = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True, timeout=120).stdout.strip())

    from omnistudio.app import StudioApp
    from omnistudio.studio.autosave import Autosave
    from omnistudio.studio.controller import Studio
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    timings: dict[str, float] = {}

    async def run() -> None:
        started = time.perf_counter()
        studio = Studio("tiny", "cpu", audio="virtual")
        app = StudioApp(studio, autosave=Autosave(tmp_path / "autosave.script", interval=0.0))
        async with app.run_test(size=(120, 34)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.is_mounted, what="the main screen")
            timings["screen"] = time.perf_counter() - started
            editor = app.main_screen.query_one(ScriptEditor)
            editor.focus()
            await pilot.press("h", "i")  # typing works while the engine is still loading
            assert editor.text.endswith("hi")
            telemetry = app.main_screen.query_one(Telemetry)
            await wait_for(pilot, lambda: telemetry.engine_state == "ready", timeout=60, what="engine ready")
            timings["ready"] = time.perf_counter() - started

    asyncio.run(run())
    print(f"\nimports {import_s:.2f} s, interactive screen {timings['screen']:.2f} s, "
          f"engine ready {timings['ready']:.2f} s")
    assert import_s + timings["screen"] < 5.0
