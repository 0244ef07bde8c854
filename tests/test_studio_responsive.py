"""Keystrokes and timers keep running while the engine renders: the render runs off the UI thread.

The engine's render is held busy (rendering its group again, real work on the CPU, as a long take is)
until the UI has shown it keeps working: key presses typed into the editor land and a 10 ms UI timer
keeps ticking while the engine thread is inside the render. Nothing here reads a clock: a render on the
UI thread, or a UI that waits for the render, cannot pass (the render only ends once the UI has ticked
and typed, or after a hang guard, which the test reports as a failure). How long the UI loop's gaps
are under a render is a performance figure, for a bench, not a test.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from support.studio import make_app, wait_for

HANG_S = 60.0  # the busy render gives up after this: only a guard against a hang, never reached when it passes


def test_ui_keeps_handling_keys_and_timers_while_the_engine_renders(tiny_engine, voice_roster_file: Path,  # noqa: ANN001
                                                                    tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from textual import events

    from omnistudio.take.link import LocalEngine
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    script = " ".join(f"Sentence number {i} of the evening bulletin." for i in range(12))
    rendering = threading.Event()  # the engine thread is inside a render
    release = threading.Event()  # the UI has shown it keeps working: the render may end
    render_threads: set[int] = set()
    gave_up = [False]
    real = LocalEngine.render_tokens

    def busy_render(self, items, options, cancel=None, on_step=None):  # noqa: ANN001, ANN202
        render_threads.add(threading.get_ident())
        rendering.set()
        try:
            pending = real(self, items, options, cancel, on_step)
            deadline = time.monotonic() + HANG_S
            while not release.is_set():  # the same group again: the engine keeps the CPU busy
                if time.monotonic() > deadline:
                    gave_up[0] = True
                    release.set()
                    break
                real(self, items, options, cancel)
            return pending
        finally:
            rendering.clear()

    monkeypatch.setattr(LocalEngine, "render_tokens", busy_render)
    ui_thread: set[int] = set()
    ticks_in_render = [0]
    typed: list[str] = []

    async def run() -> None:
        app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", virtual_rate=8.0)
        async with app.run_test(size=(120, 34)) as pilot:
            screen = app.main_screen
            await wait_for(pilot, lambda: screen.query_one(Telemetry).engine_state == "ready", timeout=HANG_S,
                           what="ready")
            app.studio.select("ruby")
            editor = screen.query_one(ScriptEditor)
            editor.load_text(script)
            editor.focus()

            def tick() -> None:  # a UI timer: it runs on the UI thread, and only while the UI loop runs
                ui_thread.add(threading.get_ident())
                if rendering.is_set():
                    ticks_in_render[0] += 1

            app.set_interval(0.01, tick)
            await pilot.press("f5")
            await wait_for(pilot, lambda: rendering.is_set() or gave_up[0], timeout=HANG_S, what="the render")
            editor.move_cursor(editor.document.end)
            for key in "xxxxx":  # as the terminal sends them (Pilot.press would wait for an idle CPU: never, here)
                app.post_message(events.Key(key, key))
            await wait_for(pilot, lambda: len(editor.text) == len(script) + 5 or gave_up[0],
                           what="the keys typed during the render")
            typed.append(editor.text[len(script):])
            await wait_for(pilot, lambda: ticks_in_render[0] >= 5 or gave_up[0], what="UI timer ticks during the render")
            still_rendering = rendering.is_set()
            release.set()
            await pilot.press("f8")
            assert not gave_up[0], "the UI was stuck while the engine rendered (the render gave up waiting for it)"
            assert still_rendering, "the render ended before the UI was shown to keep working"

    asyncio.run(run())
    assert typed == ["xxxxx"], "keys typed during the render did not land"  # every key, in the editor
    assert ticks_in_render[0] >= 5
    assert len(ui_thread) == 1 and render_threads, (ui_thread, render_threads)
    assert not render_threads & ui_thread, "the engine rendered on the UI thread"
