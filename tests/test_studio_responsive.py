"""Keystrokes stay responsive while the engine renders: the UI loop's largest stall is measured.

A 10 ms timer on the app records the gaps between its ticks while the engine thread renders a
12-sentence script and keys are typed. The target is 100 ms (about 40 ms measured on an idle
2-core machine, tiny model). On a machine loaded by other work the event loop also waits for the
CPU when nothing renders (672 ms measured at load average 15), and the engine thread's share of
the CPU makes each of the UI's waits longer still, so the same timer is first measured idle for
half a second, and the bound is 100 ms plus twice that idle gap (about 120-140 ms on an idle machine). Both figures are printed (run with -s). The clock starts
at the timer's first tick, so app start-up is not counted as a stall.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from studio_support import make_app, wait_for


def test_ui_loop_does_not_stall_while_rendering(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    script = " ".join(f"Sentence number {i} of the evening bulletin." for i in range(12))
    stalls: list[float] = []
    rendered: list[int] = []
    idle: list[float] = []

    async def run() -> None:
        app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", virtual_rate=8.0)
        async with app.run_test(size=(120, 34)) as pilot:
            screen = app.main_screen
            await wait_for(pilot, lambda: screen.query_one(Telemetry).engine_state == "ready", what="ready")
            app.studio.select("ruby")
            editor = screen.query_one(ScriptEditor)
            editor.load_text(script)
            editor.focus()
            last: list[float | None] = [None]

            def tick() -> None:
                now = time.perf_counter()
                if last[0] is not None:  # the first tick only starts the clock
                    stalls.append(now - last[0])
                last[0] = now

            app.set_interval(0.01, tick)
            await wait_for(pilot, lambda: last[0] is not None, what="the timer to start")
            await pilot.pause(0.5)  # idle: what the machine's load alone costs the loop
            idle.extend(stalls)
            stalls.clear()
            await pilot.press("f5")
            await wait_for(pilot, lambda: app.studio.state == "rendering", what="rendering")
            before = len(editor.text)
            await pilot.press("end")
            for _ in range(5):
                await pilot.press("x")
                rendered.append(len(editor.text))
            assert len(editor.text) == before + 5  # every key typed during the render landed
            await pilot.press("f8")

    asyncio.run(run())
    worst, idle_worst = max(stalls), max(idle)
    bound = 0.1 + 2 * idle_worst
    print(f"\nUI timer ticks during render: {len(stalls)}, worst gap {worst * 1000:.0f} ms "
          f"(idle worst gap {idle_worst * 1000:.0f} ms, bound {bound * 1000:.0f} ms), "
          f"keys typed during render: {len(rendered)}")
    assert len(stalls) > 10 and len(idle) > 5
    assert worst < bound, f"the UI loop stalled {worst * 1000:.0f} ms while the engine rendered"
