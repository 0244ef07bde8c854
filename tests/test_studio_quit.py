"""Ctrl+Q while a render or an export runs says what will be lost and asks (issue 46); idle, it quits at once.

The controller's state is set as its engine thread sets it (``state``, ``rendering_play``, and the engine-state
event through the app's report hook), so the test does not race a real render's end."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.studio import make_app, until_ready, wait_for

from omnistudio.studio.events import EngineState


def test_ctrl_q_when_idle_quits_at_once(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_idle(tiny_engine, voice_roster_file, tmp_path))


async def _idle(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script")
    async with app.run_test(size=(80, 24)) as pilot:
        await until_ready(pilot)
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None, what="the app to quit")
    assert app.return_code == 0


def test_ctrl_q_mid_export_or_render_asks_what_is_lost(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_asks(tiny_engine, voice_roster_file, tmp_path))


async def _asks(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from textual.widgets import Label

    from omnistudio.screens.quit import QuitDialog

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script")
    async with app.run_test(size=(80, 24)) as pilot:
        await until_ready(pilot)
        studio = app.studio

        async def ask() -> str:
            await pilot.press("ctrl+q")
            await wait_for(pilot, lambda: isinstance(app.screen, QuitDialog), what="the quit question")
            return str(app.screen.query_one("#quit-message", Label).render())

        # a play or an export asked a moment ago, still on the engine thread's queue (found in tmux: F5 then
        # Ctrl+Q at once quit without a word)
        waiting = studio.commands.user_waiting
        studio.commands.user_waiting = lambda: True  # type: ignore[method-assign]
        assert await ask() == "The render in progress (the play or export just asked for, not started yet) will be lost."
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, QuitDialog), what="the question closed")
        studio.commands.user_waiting = waiting  # type: ignore[method-assign]

        # an export: what the controller sets while it runs one
        studio.state = "rendering"
        studio.report(EngineState("rendering", "exporting bulletin.wav"))
        studio.report(EngineState("rendering", "building ruby (en) 1/1"))  # its voices: still the export
        await pilot.pause()
        assert await ask() == "The render in progress (export of bulletin.wav) will be lost."
        assert [b.label.plain for b in app.screen.query("Button")] == ["Quit", "Cancel"]
        await pilot.press("escape")  # cancel: the studio goes on
        await wait_for(pilot, lambda: not isinstance(app.screen, QuitDialog), what="the question closed")
        assert app.return_code is None
        await pilot.press("enter")  # nothing is asked any more (the editor or list has the key, not a dialog)
        assert app.return_code is None

        # a playback's render
        studio.report(EngineState("ready"))
        studio.state, studio.rendering_play = "rendering", True
        studio.report(EngineState("rendering"))
        await pilot.pause()
        assert "(playback: the sentences not yet rendered)" in await ask()
        await pilot.click("#cancel")
        await wait_for(pilot, lambda: not isinstance(app.screen, QuitDialog), what="the question cancelled")
        assert app.return_code is None
        await ask()
        await pilot.click("#quit")  # Quit: the app ends
        await wait_for(pilot, lambda: app.return_code is not None, what="the app to quit")
        studio.rendering_play = False
    assert app.return_code == 0
