"""Widget tests: the morph slider by keys and by mouse; the meter's Line API drawing; settings and autosave."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from omnistudio.widgets.lufs_meter import LufsMeter
from omnistudio.widgets.morph_slider import MorphSlider


class SliderApp(App[None]):
    def compose(self) -> ComposeResult:
        yield MorphSlider(1.0, id="morph")
        yield LufsMeter(-23.0, id="meter")


def test_morph_slider_keys_and_mouse() -> None:
    async def run() -> None:
        messages: list[object] = []
        app = SliderApp()
        async with app.run_test(size=(46, 8), message_hook=messages.append) as pilot:
            slider = app.query_one(MorphSlider)
            slider.focus()
            await pilot.press("left", "left")
            assert slider.value == pytest.approx(0.90)
            await pilot.press("shift+left")
            assert slider.value == pytest.approx(0.89)
            await pilot.press("shift+right", "right")
            assert slider.value == pytest.approx(0.95)
            await pilot.press("end", "right")
            assert slider.value == 1.0  # clamped
            track = slider.size.width - 6
            await pilot.click("#morph", offset=(0, 0))
            assert slider.value == 0.0
            await pilot.click("#morph", offset=(round((track - 1) / 2), 0))
            assert slider.value == pytest.approx(0.5, abs=1 / (track - 1))
            # drag: press at the left, move to the right end, release
            await pilot.mouse_down("#morph", offset=(1, 0))
            await pilot.hover("#morph", offset=(track - 1, 0))
            await pilot.mouse_up("#morph", offset=(track - 1, 0))
            assert slider.value == 1.0
            await pilot.pause()
        unique = {id(m): m for m in messages if isinstance(m, MorphSlider.Changed)}  # bubbling repeats them
        changed = [m.value for m in unique.values()]
        assert changed[:4] == [0.95, 0.90, 0.89, 0.90]
        assert changed[-1] == 1.0

    asyncio.run(run())


def test_meter_lines_show_values_target_and_colours() -> None:
    async def run() -> None:
        app = SliderApp()
        async with app.run_test(size=(46, 8)) as pilot:
            meter = app.query_one(LufsMeter)
            meter.update_reading(-20.0, -30.0, -23.4, -0.5)
            await pilot.pause()
            lines = [meter.render_line(y) for y in range(4)]
            texts = [line.text for line in lines]
            assert texts[0].startswith("M") and "-20.0" in texts[0] and "│" in texts[0]
            assert "-23.4 LUFS" in texts[2] and "-0.5 dBTP" in texts[3]
            colours = {str(seg.style.color.name) for seg in lines[0] if seg.style and seg.style.color}
            assert "red" in colours  # -20 is over a -23 target
            colours_s = {str(seg.style.color.name) for seg in lines[1] if seg.style and seg.style.color}
            assert "yellow" in colours_s and "red" not in colours_s  # -30 is under

    asyncio.run(run())


def test_settings_roundtrip_and_bad_file(tmp_path: Path) -> None:
    from omnistudio.errors import UserError
    from omnistudio.studio.settings import StudioSettings, load_settings, save_settings

    path = tmp_path / "settings.json"
    saved = StudioSettings(num_step=12, target_lufs=-16.0, room_tone=False)
    save_settings(saved, path)
    assert load_settings(path) == (saved, None)
    with pytest.raises(UserError, match="num_step"):
        StudioSettings(num_step=0).validated()
    with pytest.raises(UserError, match="target loudness"):
        StudioSettings(target_lufs=-20).validated()
    assert StudioSettings(dtype="BF16").validated().dtype == "bf16"  # the backbone dtype at the next start
    atsc = StudioSettings(profile="ATSC").validated()  # the loudness rule sets the target; exports keep its ceiling
    assert (atsc.profile, atsc.target_lufs, atsc.rule().true_peak_dbtp) == ("atsc", -24.0, -2.0)
    from omnistudio.studio.adapters import finishing_options

    assert (finishing_options(atsc).true_peak_db, finishing_options(atsc).profile) == (-2.0, "atsc")
    assert StudioSettings(target_lufs=-16.0).rule().key == "podcast"  # a settings file from before rules
    with pytest.raises(UserError, match="unknown loudness profile"):
        StudioSettings(profile="loud").validated()
    with pytest.raises(UserError, match="dtype 'int8'"):
        StudioSettings(dtype="int8").validated()
    path.write_text(json.dumps({"num_step": "many"}))
    settings, warning = load_settings(path)
    assert settings == StudioSettings() and "num_step" in (warning or "")


def test_autosave_is_throttled_and_atomic(tmp_path: Path) -> None:
    from omnistudio.studio.autosave import Autosave

    now = [0.0]
    path = tmp_path / "autosave.script"
    saver = Autosave(path, interval=2.0, clock=lambda: now[0])
    assert saver.save("one") is True
    assert saver.save("one two") is False and path.read_text() == "one"  # throttled
    now[0] = 2.5
    assert saver.flush() is True and path.read_text() == "one two"
    assert list(tmp_path.iterdir()) == [path]  # no temp files left behind
    assert Autosave(path).restore() == "one two"
