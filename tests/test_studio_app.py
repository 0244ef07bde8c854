"""Pilot tests of the studio: pick, type, play (highlight and meter move), stop, export; autosave restore."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest
import soundfile as sf

from support.studio import make_app, wait_for

pytestmark = pytest.mark.timeout(400)



def test_pick_type_play_stop_export(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:
    asyncio.run(_pick_type_play_stop_export(tiny_engine, voice_roster_file, tmp_path))


async def _pick_type_play_stop_export(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:
    from omnistudio.widgets.anchor_picker import AnchorPicker
    from omnistudio.widgets.lufs_meter import LufsMeter
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry
    from omnistudio.widgets.transport import Transport

    from omnistudio.screens import messages as msg

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script")
    messages: list[object] = []
    async with app.run_test(size=(120, 36), message_hook=messages.append) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.query_one(Telemetry).engine_state == "ready", what="engine ready")
        # the controller's events arrive as one message type each (no generic event message)
        kinds = {type(m) for m in messages}
        assert {msg.EngineStateChanged, msg.EngineReady, msg.VoicesListed} <= kinds
        # pick an anchor: filter by typing, enter picks the first match
        await pilot.click("#anchor-filter")
        await pilot.press(*"storm", "enter")
        assert screen.query_one(AnchorPicker).selected == "storm"
        assert app.studio.anchor == "storm"
        # type the script
        editor = screen.query_one(ScriptEditor)
        editor.focus()
        await pilot.press(*"Good evening. Here is the news.", "enter", *"[ruby] And now the weather.")
        assert editor.text == "Good evening. Here is the news.\n[ruby] And now the weather."
        # play: the highlight advances through the sentences and the meter moves
        await pilot.press("f5")
        await wait_for(pilot, lambda: any(isinstance(m, msg.PlaybackStarted) for m in messages), what="started")
        heard: list[tuple[int, int]] = []
        meter = screen.query_one(LufsMeter)

        def progressed() -> bool:
            if editor.playing and (not heard or heard[-1] != editor.playing):
                heard.append(editor.playing)
            return len(heard) >= 3

        await wait_for(pilot, progressed, what=f"the highlight to reach the third sentence {heard} {app.screen} {app.studio.state}")
        assert [editor.text[a:b] for a, b in heard] == ["Good evening.", "Here is the news.", "And now the weather."]
        assert math.isfinite(meter.momentary) and meter.momentary > -70
        assert screen.query_one(Transport).state == "playing"
        assert screen.query_one(Telemetry).ttfa > 0
        # stop: the highlight clears and playback ends
        await pilot.press("f8")
        await wait_for(pilot, lambda: screen.query_one(Transport).state == "stopped", what="stop")
        assert editor.playing is None
        # export through the dialog
        out = tmp_path / "take.flac"
        await pilot.press("ctrl+e")
        await pilot.pause()
        field = app.screen.query_one("#export-path")
        field.value = str(out)
        await pilot.press("enter")
        await wait_for(pilot, lambda: out.exists() and Path(str(out) + ".json").exists(), what="the export")
    data, sr = sf.read(str(out))
    assert sr == 48_000 and data.shape[1] == 2 and len(data) > sr  # EBU R128's file: 48 kHz, dual-mono
    from omnistudio.audio.loudness import measure

    assert abs(measure(data.astype("float32"), sr).integrated_lufs - (-23.0)) < 0.5  # as a stereo meter reads it


def test_autosave_restored_after_crash(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:
    asyncio.run(_autosave_restored_after_crash(tiny_engine, voice_roster_file, tmp_path))


async def _autosave_restored_after_crash(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:
    from omnistudio.widgets.script_editor import ScriptEditor

    path = tmp_path / "autosave.script"
    app = make_app(tiny_engine, voice_roster_file, path)
    async with app.run_test(size=(120, 36)) as pilot:
        editor = app.screen.query_one(ScriptEditor)
        editor.focus()
        await pilot.press(*"Breaking news.")
        await wait_for(pilot, lambda: path.exists() and path.read_text() == "Breaking news.", what="autosave")
        # a crash: the app never gets to shut down cleanly; only what autosave wrote survives
        saved = path.read_text()
        app.autosave.flush = lambda: False  # type: ignore[method-assign]
    assert saved == "Breaking news."
    app2 = make_app(tiny_engine, voice_roster_file, path)
    async with app2.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert app2.screen.query_one(ScriptEditor).text == "Breaking news."
