"""Pilot: takes in the studio by key: F9, Alt+Left/Right, F10, Enter on the take list, Ctrl+Z; the gutter."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.studio import anchored_app, wait_for
from support.wait import HANG_S

from omnistudio.projects.project import Project

pytestmark = pytest.mark.timeout(500)
SCRIPT = "Good evening. Here is the news.\nAnd now the weather."



def test_takes_by_key(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_takes_by_key(tiny_engine, voice_roster_file, tmp_path))


async def _takes_by_key(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.take_list import TakeList
    from omnistudio.widgets.telemetry import Telemetry

    path = tmp_path / "news.omniproj"
    app = anchored_app(tiny_engine, voice_roster_file, tmp_path, project=path, script=SCRIPT, virtual_rate=50.0)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        editor = screen.query_one(ScriptEditor)
        takes = app.studio.takes
        assert editor.text == SCRIPT  # the project's script
        await wait_for(pilot, lambda: screen.query_one(Telemetry).engine_state == "ready", what="engine ready")

        def idle() -> bool:
            return app.studio.commands.empty() and app.studio.state == "ready"

        await pilot.press("f5")
        await wait_for(pilot, lambda: app.takes is not None and app.takes.counts == (1, 1, 1) and idle(),
                       timeout=HANG_S, what="a take per sentence")
        await wait_for(pilot, lambda: editor.take_marks == {0: "1 1", 1: "1"}, what="the take marks")  # a message

        editor.focus()
        editor.cursor_location = (0, 20)  # in "Here is the news."
        await pilot.press("f9")
        await wait_for(pilot, lambda: app.takes.counts == (1, 2, 1) and idle(), timeout=HANG_S, what="F9's take")
        line = takes.project.lines[1]  # the script is parsed again on each command: fresh Line objects
        first, second = line.takes
        assert second.seed != first.seed and line.chosen == second.id
        assert editor.take_marks == {0: "1 2", 1: "1"}
        listed = screen.query_one(TakeList)
        assert listed.sentence == 1 and listed.option_count == 2

        await pilot.press("alt+left")
        await wait_for(pilot, lambda: takes.played[-1:] == [first.id] and idle(), what="the first take")
        await pilot.press("alt+right")
        await wait_for(pilot, lambda: takes.played[-1:] == [second.id] and idle(), what="the second take")
        await pilot.press("f10")
        await wait_for(pilot, lambda: takes.played[-2:] == [second.id, first.id] and idle(), what="A/B")

        listed.focus()
        listed.highlighted = 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.takes.takes[1][0].chosen, what="take 1 chosen")
        assert Project.open(path).lines[1].chosen == first.id  # saved
        await pilot.press("ctrl+z")
        await wait_for(pilot, lambda: app.takes.takes[1][1].chosen, what="undo")
        assert Project.open(path).lines[1].chosen == second.id


def test_a_reopened_project_shows_its_takes_at_once(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_reopened(tiny_engine, voice_roster_file, tmp_path))


async def _reopened(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.take_list import TakeList
    from omnistudio.widgets.telemetry import Telemetry

    path = tmp_path / "news.omniproj"
    app = anchored_app(tiny_engine, voice_roster_file, tmp_path, project=path, script=SCRIPT, virtual_rate=50.0)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.query_one(Telemetry).engine_state == "ready", what="engine ready")
        await pilot.press("f5")
        await wait_for(pilot, lambda: app.takes is not None and app.takes.counts == (1, 1, 1)
                       and app.studio.commands.empty() and app.studio.state == "ready", what="a take per sentence")
    again = anchored_app(tiny_engine, voice_roster_file, tmp_path, anchor=None, project=path)
    async with again.run_test(size=(140, 40)) as pilot:
        editor = again.screen.query_one(ScriptEditor)
        await wait_for(pilot, lambda: editor.take_marks == {0: "1 1", 1: "1"}, what="the take counts")
        assert again.screen.query_one(TakeList).option_count == 1  # the sentence under the cursor's take


def test_an_edit_after_the_last_play_is_kept_in_the_project(tiny_engine, voice_roster_file: Path,
                                                            tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_edit_kept(tiny_engine, voice_roster_file, tmp_path))


async def _edit_kept(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.widgets.script_editor import ScriptEditor

    path = tmp_path / "news.omniproj"
    app = anchored_app(tiny_engine, voice_roster_file, tmp_path, project=path, script=SCRIPT)
    async with app.run_test(size=(140, 40)) as pilot:
        editor = app.screen.query_one(ScriptEditor)
        editor.focus()
        editor.move_cursor((1, 0))
        await pilot.press(*"[storm] ")
        await wait_for(pilot, lambda: "[storm] And" in editor.text, what="the typed tag")  # a loaded machine lags
        edited = editor.text
    assert edited == "Good evening. Here is the news.\n[storm] And now the weather."
    assert Project.open(path).script == edited  # quit without playing: the edit is in the project
