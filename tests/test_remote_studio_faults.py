"""The studio on a remote engine, with the network failing on purpose (a stand-in server, no model).

Driven with Pilot like a user: the anchor list comes from the server; play; the server goes away
mid-render -> an error notification (once), no traceback, no failure modal, script, settings and
autosave intact, and the link's blocking network calls all run off the UI thread: while the link is
held in its reconnect the UI still handles key presses and timer ticks; the server comes back on the
same port -> the studio finds it again (backoff) and play works. A server that is down when the studio
starts is a notification too, and the studio comes up once the server does.

No test here reads a clock: the stand-in holds a sentence until it is told, so the render is in
progress when the server goes away on any machine, and the link's reconnect is held at a gate while
the UI is shown to keep working (tests/support/remote.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from support.remote import FakeServer, LinkGate, refused_port
from support.studio import Recorder, wait_for, track_ui_while_held, ui_answers_while_link_blocked
from support.wait import HANG_S

pytestmark = pytest.mark.timeout(500)

SCRIPT = "[ruby] Good evening. Here is the news.\nAnd now the weather. That was the news."
LONG_SCRIPT = SCRIPT + "\nTraffic is light. Markets closed higher.\nRain moves in tonight. Sport is next. Good night."


def _app(url: str, autosave: Path):  # noqa: ANN202
    from omnistudio.app import StudioApp
    from omnistudio.studio.autosave import Autosave
    from omnistudio.studio.controller import Studio
    from omnistudio.studio.settings import StudioSettings
    from omnistudio.client.engine import RemoteEngine

    studio = Studio(link=RemoteEngine(url, connect_budget_s=0.8), audio="virtual",
                    settings=StudioSettings(anchor="ruby", seed=7))
    return StudioApp(studio, autosave=Autosave(autosave, interval=0.0), welcome=False)


def test_server_lost_mid_render_then_back(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.INFO)
    asyncio.run(_lost_mid_render(tmp_path, caplog, monkeypatch))


async def _lost_mid_render(tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from omnistudio.screens.error import ErrorModal
    from omnistudio.studio import events as ev
    from omnistudio.widgets.anchor_picker import AnchorPicker
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    # The first sentence is answered, the next one held: when the server goes away, the take is mid-render.
    server = FakeServer(behaviour="hold", free=1).start()
    gate = LinkGate(monkeypatch)
    autosave = tmp_path / "autosave.script"
    app = _app(server.url, autosave)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            screen = app.main_screen
            telemetry = screen.query_one(Telemetry)
            recorder = Recorder(app)
            await wait_for(pilot, lambda: telemetry.engine_state == "ready", timeout=HANG_S, what="ready")
            # the anchor list is the server's (the stand-in lists two anchors), the model line names it
            await wait_for(pilot, lambda: [r.id for r in screen.query_one(AnchorPicker).rows] == ["ruby", "storm"],
                           what="the server's roster")
            assert telemetry.where == f"fake on cpu @ 127.0.0.1:{server.port}"
            editor = screen.query_one(ScriptEditor)
            editor.load_text(LONG_SCRIPT)
            settings = app.studio.settings
            ui_thread, ticks_while_held = track_ui_while_held(app, gate)
            await pilot.press("f5")
            await wait_for(pilot, lambda: recorder.first(ev.SentenceRendered) is not None and server.holding.is_set(),
                           timeout=HANG_S, what="a sentence played and the next one in the server's hands")
            # from here every network call the link makes waits at the gate until it is released
            await wait_for(pilot, gate.arm, what="no network call in flight")
            killed = time.monotonic()
            await asyncio.to_thread(server.stop)  # it goes away mid-render (its open connection closed)
            await wait_for(pilot, lambda: gate.held or gate.expired, timeout=HANG_S, what="the link trying to reach the server again")
            # The link is blocked on the network: the UI still answers keys and runs its timers.
            await ui_answers_while_link_blocked(pilot, gate, editor, ticks_while_held)
            await wait_for(pilot, lambda: recorder.first(ev.Notice, killed, severity="error") is not None,
                           timeout=HANG_S, what="the error notification")
            _, notice = recorder.first(ev.Notice, killed, severity="error")
            assert "mid-render" in notice.message, notice.message
            # on screen, naming the server (the offline state, reported before it, is shown by then)
            await wait_for(pilot, lambda: any(str(server.port) in n.message for n in app._notifications),  # noqa: SLF001
                           what="the notification on screen")
            assert telemetry.engine_state == "offline"
            assert not any(isinstance(s, ErrorModal) for s in app.screen_stack)
            assert recorder.first(ev.Failure) is None
            assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
            # every blocking network call of the link (connection attempts, GETs) ran off the UI thread,
            # the reconnect after the server went away among them
            assert len(ui_thread) == 1 and gate.threads(armed_only=True), gate.calls
            assert not gate.threads() & ui_thread, "a network call ran on the UI thread"
            assert editor.text == LONG_SCRIPT and app.studio.settings == settings
            app.autosave.save(editor.text)
            assert autosave.read_text(encoding="utf-8") == LONG_SCRIPT
            # The server comes back on the same port (the studio's link keeps its URL): the studio finds
            # it (backoff), says so, and play works again; the fault was said once, not at every look.
            back = await asyncio.to_thread(FakeServer(port=server.port).start)
            try:
                await wait_for(pilot, lambda: telemetry.engine_state == "ready", timeout=HANG_S, what="back")
                await wait_for(pilot, lambda: recorder.first(ev.Notice, killed, severity="information") is not None,
                               what="the notice that the server answers again")
                errors = [e for at, e in recorder.events if at >= killed and isinstance(e, ev.Notice)
                          and e.severity == "error"]
                assert errors == [notice], errors
                again = time.monotonic()
                await pilot.press("f5")
                await wait_for(pilot, lambda: recorder.first(ev.PlaybackStarted, again) is not None,
                               timeout=HANG_S, what="play after the server came back")
                await wait_for(pilot, lambda: len(back.requests) >= 2, what="the take's requests")
            finally:
                back.stop()
    finally:
        gate.release()
        server.stop()


def test_server_down_at_start_then_up(tmp_path: Path) -> None:
    asyncio.run(_down_at_start(tmp_path))


async def _down_at_start(tmp_path: Path) -> None:
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    with refused_port() as held:  # nothing answers there until the server listens on this very socket
        app = _app(f"http://127.0.0.1:{held.getsockname()[1]}", tmp_path / "autosave.script")
        async with app.run_test(size=(120, 36)) as pilot:
            telemetry = app.main_screen.query_one(Telemetry)
            await wait_for(pilot, lambda: telemetry.engine_state == "offline", timeout=HANG_S, what="offline")
            await wait_for(pilot, lambda: any("unreachable" in n.message for n in app._notifications),  # noqa: SLF001
                           what="the notification")
            editor = app.main_screen.query_one(ScriptEditor)
            editor.focus()
            await pilot.press("h", "i")  # the studio edits while the server is away
            assert editor.text.endswith("hi")
            server = FakeServer(sock=held).start()
            try:
                await wait_for(pilot, lambda: telemetry.engine_state == "ready", timeout=HANG_S, what="the server")
                assert telemetry.where.startswith("fake on cpu @")
            finally:
                server.stop()
