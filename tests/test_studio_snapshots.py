"""Snapshots of the studio: the main screen empty, ready and with an error (120x34), and at 80x24,
120x40 and 200x60 the main screen while playing (meter fed fixed values), the settings (F2) and the
export dialog (Ctrl+E). tests/test_studio_layout.py checks the same states for clipping and overlap.

Pinned: no cursor blink, a fixed roster, no clock in the header, no live polling (the playing
state is fed fixed values, as the meter thread would), a fresh autosave file, the export's path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.studio import SCREENS, SIZES, make_app, ready_with_script, until_ready

SIZE = (120, 34)


@pytest.fixture(autouse=True)
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import Input, TextArea

    monkeypatch.setattr(TextArea, "cursor_blink", False)
    monkeypatch.setattr(Input, "cursor_blink", False)


@pytest.fixture
def app(tiny_engine, voice_roster_file: Path, tmp_path: Path):  # noqa: ANN001, ANN201
    return make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", live=False)


def test_snapshot_empty(app, snap_compare) -> None:  # noqa: ANN001
    assert snap_compare(app, terminal_size=SIZE, run_before=until_ready)


def test_snapshot_ready(app, snap_compare) -> None:  # noqa: ANN001
    assert snap_compare(app, terminal_size=SIZE, run_before=ready_with_script)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("screen", SCREENS)
def test_snapshot_sizes(app, snap_compare, screen: str, size: str) -> None:  # noqa: ANN001
    """docs/screenshot.svg is the 120x40 playing one, docs/screenshot-80x24.svg the 80x24 one
    (scripts/screenshots.sh copies them)."""
    assert snap_compare(app, terminal_size=SIZES[size], run_before=SCREENS[screen])


def test_snapshot_error(app, snap_compare) -> None:  # noqa: ANN001
    async def error(pilot) -> None:  # noqa: ANN001
        await until_ready(pilot)
        await pilot.press("f5")  # nothing typed: the script is empty
        await pilot.pause()
        from omnistudio.screens.error import ErrorModal

        assert isinstance(pilot.app.screen, ErrorModal)

    assert snap_compare(app, terminal_size=SIZE, run_before=error)


def test_snapshot_project_after_the_first_play(tiny_engine, voice_roster_file: Path, tmp_path: Path,
                                               snap_compare) -> None:  # noqa: ANN001
    """80x24, a project after its first F5: the gutter holds each paragraph's language and take counts and the
    text still wraps inside the editor (it was cut at the right edge once the counts widened the gutter)."""
    from support.studio import anchored_app, wait_for

    script = ("[ruby] Good evening. Here are tonight's headlines, read at the top of the hour.\n"
              "[valentina:es] Buenas noches. Estas son las noticias de hoy.")
    app = anchored_app(tiny_engine, voice_roster_file, tmp_path, project=tmp_path / "news.omniproj", script=script,
                       virtual_rate=50.0, live=False)

    async def first_play(pilot) -> None:  # noqa: ANN001
        from omnistudio.widgets.script_editor import ScriptEditor

        await until_ready(pilot)
        editor = pilot.app.main_screen.query_one(ScriptEditor)
        editor.focus()
        await pilot.press("f5")
        studio = pilot.app.studio
        await wait_for(pilot, lambda: editor.take_marks == {0: "1 1", 1: "1 1"} and bool(editor.languages)
                       and studio.commands.empty() and studio.state == "ready" and not studio.rendering_play,
                       what="the first play's takes")

    assert snap_compare(app, terminal_size=(80, 24), run_before=first_play)
