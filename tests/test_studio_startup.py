"""The real studio on `--model tiny`: the screen is interactive before the engine is ready.

The engine's load waits until the keys were typed (a gate around Engine.load), so the test shows
typing works while the engine is loading, on any machine, fast or loaded. What makes the start cheap
is asserted as behaviour, not as seconds: importing the studio's UI does not import the model stack
(torch, transformers), and the engine loads on a thread of its own, never on the UI thread. How long
the start takes is a performance figure, for a bench.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

from support.studio import wait_for
from support.wait import HANG_S

MODEL_STACK = ("torch", "transformers", "omnistudio.engine.engine", "omnistudio.engine.model")


def test_studio_ui_imports_leave_the_model_stack_to_the_engine(tmp_path: Path) -> None:
    # A fresh interpreter imports the studio's UI, then does what a user's `omnistudio studio` does
    # before its first screen: reads a saved settings file (every field validated, dtype and quantize
    # included) and resolves the model name. Neither step may load torch.
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"dtype": "bf16", "quantize": "int8", "anchor": "ruby_en"}), encoding="utf-8")
    code = ("import json, sys; from pathlib import Path; import omnistudio.app, omnistudio.studio.controller; "
            f"ui = [m for m in {MODEL_STACK!r} if m in sys.modules]; "
            "import omnistudio.commands.studio; from omnistudio.engine.model import resolve_model; "
            "from omnistudio.studio.settings import load_settings; "
            f"s, warning = load_settings(Path({str(settings)!r})); resolve_model('tiny'); "
            "assert warning is None and (s.dtype, s.quantize) == ('bf16', 'int8'), (s, warning); "
            "print(json.dumps([ui, [m for m in ('torch', 'transformers') if m in sys.modules]]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    ui, start = json.loads(done.stdout)
    assert ui == [], "the studio's UI imports the model stack before its first screen"
    assert start == [], "reading the settings or the model name before the first screen loads torch"


def test_studio_is_interactive_before_the_engine_is_ready(tiny_engine, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from omnistudio.app import StudioApp
    from omnistudio.engine.engine import Engine
    from omnistudio.studio.autosave import Autosave
    from omnistudio.engine.settings import EngineConfig
    from omnistudio.studio.controller import Studio
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    typed = threading.Event()
    load_threads: list[int] = []
    ui_thread: list[int] = []
    real_load = Engine.load.__func__

    def gated_load(cls, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        load_threads.append(threading.get_ident())
        assert typed.wait(timeout=HANG_S), "the keys were never typed"
        return real_load(cls, *args, **kwargs)

    monkeypatch.setattr(Engine, "load", classmethod(gated_load))

    async def run() -> None:
        ui_thread.append(threading.get_ident())  # the app's event loop runs here
        studio = Studio(EngineConfig("tiny", "cpu"), audio="virtual")
        app = StudioApp(studio, autosave=Autosave(tmp_path / "autosave.script", interval=0.0))
        async with app.run_test(size=(120, 34)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.is_mounted, timeout=HANG_S, what="the main screen")
            editor = app.main_screen.query_one(ScriptEditor)
            editor.focus()
            telemetry = app.main_screen.query_one(Telemetry)
            before = editor.text  # empty, or the first-start example script
            await pilot.press("h", "i")  # typing works while the engine is still loading
            assert len(editor.text) == len(before) + 2 and "hi" in editor.text
            assert (studio.state, telemetry.engine_state) == ("loading", "loading")
            typed.set()
            await wait_for(pilot, lambda: telemetry.engine_state == "ready", timeout=HANG_S, what="engine ready")

    asyncio.run(run())
    assert load_threads and not set(load_threads) & set(ui_thread), "the engine loaded on the UI thread"
