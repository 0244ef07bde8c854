"""Snapshots of the main screen: empty, ready, playing (meter fed fixed values), error.

Pinned: no cursor blink, a fixed roster, no clock in the header, no live polling (the playing
state is fed fixed values, as the meter thread would), a fresh autosave file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.studio import SCRIPT, make_app, wait_for

SIZE = (120, 34)


@pytest.fixture(autouse=True)
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import Input, TextArea

    monkeypatch.setattr(TextArea, "cursor_blink", False)
    monkeypatch.setattr(Input, "cursor_blink", False)


@pytest.fixture
def app(tiny_engine, voice_roster_file: Path, tmp_path: Path):  # noqa: ANN001, ANN201
    return make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", live=False)


async def until_ready(pilot) -> None:  # noqa: ANN001
    from omnistudio.widgets.telemetry import Telemetry

    await wait_for(pilot, lambda: pilot.app.main_screen.query_one(Telemetry).engine_state == "ready",
                   what="engine ready")


def test_snapshot_empty(app, snap_compare) -> None:  # noqa: ANN001
    assert snap_compare(app, terminal_size=SIZE, run_before=until_ready)


async def _ready(pilot) -> None:  # noqa: ANN001
    from omnistudio.widgets.script_editor import ScriptEditor

    await until_ready(pilot)
    screen = pilot.app.main_screen
    screen.query_one("#anchor-list").focus()
    await pilot.press("enter")  # picks Ruby Vance (first row)
    editor = screen.query_one(ScriptEditor)
    editor.load_text(SCRIPT)
    editor.focus()
    await pilot.pause()


def test_snapshot_ready(app, snap_compare) -> None:  # noqa: ANN001
    assert snap_compare(app, terminal_size=SIZE, run_before=_ready)


def test_snapshot_playing(app, snap_compare) -> None:  # noqa: ANN001
    from omnistudio.widgets.lufs_meter import LufsMeter
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry
    from omnistudio.widgets.transport import Transport

    async def playing(pilot) -> None:  # noqa: ANN001
        await _ready(pilot)
        screen = pilot.app.main_screen
        editor = screen.query_one(ScriptEditor)
        start = editor.text.index("Here is the news.")
        editor.set_playing((start, start + len("Here is the news.")))
        screen.query_one(LufsMeter).update_reading(-21.5, -24.0, -23.2, -3.1)
        transport = screen.query_one(Transport)
        transport.state, transport.position = "playing", "sentence 2/3"
        telemetry = screen.query_one(Telemetry)
        telemetry.engine_state, telemetry.ttfa, telemetry.render_s, telemetry.rtf = "rendering", 0.182, 0.240, 0.13
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=playing)


def test_snapshot_error(app, snap_compare) -> None:  # noqa: ANN001
    async def error(pilot) -> None:  # noqa: ANN001
        await until_ready(pilot)
        await pilot.press("f5")  # nothing typed: the script is empty
        await pilot.pause()
        from omnistudio.screens.error import ErrorModal

        assert isinstance(pilot.app.screen, ErrorModal)

    assert snap_compare(app, terminal_size=SIZE, run_before=error)
