"""The studio driving a real `omnistudio serve --model tiny` subprocess over the network (Pilot).

- Play a two-anchor script with a blend tag: the highlight advances and the meter moves; the export is
  bit-identical to the in-process studio's export of the same script with the same seed.
- Kill the server (SIGKILL) mid-render: an error notification (the take's failure says so, no user
  action needed), no traceback, no failure modal, script and autosave intact; every blocking network
  call of the link runs off the UI thread, and while the link is held in its reconnect the UI still
  handles key presses and timer ticks. Restart it on the same port (the studio's link keeps its URL):
  the studio finds it again and play works.
- `render --server` writes the same samples as a local `render` with the same seed; the prepare phase
  reports each voice over the network.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from support.remote import LinkGate
from support.studio import Recorder, wait_for, track_ui_while_held, ui_answers_while_link_blocked

pytest.importorskip("omnistudio.commands.serve")  # the server (issue 15)
from support.server import Server  # noqa: E402
from support.wait import HANG_S

pytestmark = pytest.mark.timeout(900)

SCRIPT = "[ruby] Good evening. Here is the news.\n[atlas] And now the weather.\n[ruby+atlas@0.6] That was the news."
LONG = "\n".join(f"[ruby] Sentence number {i} of the late bulletin, read slowly." for i in range(8))
SEED = 11


def _studio_app(link, autosave: Path, **studio_kwargs):  # noqa: ANN001, ANN202
    from omnistudio.app import StudioApp
    from omnistudio.studio.autosave import Autosave
    from omnistudio.engine.settings import EngineConfig
    from omnistudio.studio.controller import Studio
    from omnistudio.studio.settings import StudioSettings

    settings = StudioSettings(anchor="ruby", seed=SEED)
    studio = Studio(link=link, settings=settings, audio="virtual", virtual_rate=2.0, warm=False, **studio_kwargs) \
        if link is not None else Studio(EngineConfig("tiny", "cpu"), settings=settings, audio="virtual", virtual_rate=2.0,
                                        warm=False)
    return StudioApp(studio, autosave=Autosave(autosave, interval=0.0), welcome=False)


async def _export(pilot, app, recorder: Recorder, path: Path) -> None:  # noqa: ANN001
    from omnistudio.studio import events as ev

    asked = time.monotonic()
    app.studio.export(app.main_screen.query_one("#editor").text, path)
    await wait_for(pilot, lambda: recorder.first(ev.Exported, asked) is not None, timeout=HANG_S, what="the export")


def test_remote_studio_plays_exports_survives_a_dead_server(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.INFO)
    servers = [Server()]  # the first, then the one restarted on its port
    try:
        asyncio.run(_remote(servers, tmp_path, caplog, LinkGate(monkeypatch)))
    finally:
        for server in servers:
            server.stop()
    asyncio.run(_local(tmp_path))
    remote, sr = sf.read(str(tmp_path / "remote.wav"), dtype="float32")
    local, sr_local = sf.read(str(tmp_path / "local.wav"), dtype="float32")
    assert sr == sr_local == 48_000 and len(remote) > sr  # EBU R128's file: 48 kHz dual-mono
    assert np.array_equal(remote, local), "the remote studio's export differs from the in-process one"


def _restart(port: int) -> Server:
    """The server again on ``port``: the studio's link keeps its URL, so only the same port finds it.
    The product binds with SO_REUSEADDR (the killed server's connections may hold the port in TIME_WAIT);
    a port some other program took in the moment it was free is tried again, briefly."""
    for attempt in range(3):
        try:
            return Server(port=port)
        except RuntimeError as exc:
            if "in use" not in str(exc) or attempt == 2:
                raise
            time.sleep(1.0)
    raise AssertionError("unreachable")


async def _remote(servers: list[Server], tmp_path: Path, caplog: pytest.LogCaptureFixture, gate: LinkGate) -> None:
    from omnistudio.client.engine import RemoteEngine

    autosave = tmp_path / "autosave.script"
    app = _studio_app(RemoteEngine(servers[0].url), autosave)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await _play_kill_restart(pilot, app, servers, tmp_path, caplog, gate, autosave)
    finally:
        gate.release()


async def _play_kill_restart(pilot, app, servers: list[Server], tmp_path: Path, caplog: pytest.LogCaptureFixture,  # noqa: ANN001
                             gate: LinkGate, autosave: Path) -> None:
    from omnistudio.screens.error import ErrorModal
    from omnistudio.studio import events as ev
    from omnistudio.widgets.lufs_meter import LufsMeter
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    server = servers[0]
    screen = app.main_screen
    telemetry = screen.query_one(Telemetry)
    recorder = Recorder(app)
    await wait_for(pilot, lambda: telemetry.engine_state == "ready", timeout=HANG_S, what="ready")
    assert telemetry.where.startswith("tiny on cpu @ 127.0.0.1:")
    editor = screen.query_one(ScriptEditor)
    editor.load_text(SCRIPT)
    # play: the highlight moves through the sentences and the meter moves
    heard: list[tuple[int, int]] = []

    def progressed() -> bool:
        if editor.playing and (not heard or heard[-1] != editor.playing):
            heard.append(editor.playing)
        return len(heard) >= 2

    await pilot.press("f5")
    await wait_for(pilot, progressed, timeout=HANG_S, what="the highlight to advance")
    meter = screen.query_one(LufsMeter)
    await wait_for(pilot, lambda: meter.momentary > -70, what="the meter")
    await wait_for(pilot, lambda: app.studio.state == "ready" and not app.studio.poll().playing,
                   timeout=HANG_S, what="the end of the take")
    assert telemetry.ttfa > 0 and telemetry.rtf > 0  # network TTFA, the server's RTF
    await _export(pilot, app, recorder, tmp_path / "remote.wav")

    # the server dies mid-render
    editor.load_text(LONG)
    ui_thread, ticks_while_held = track_ui_while_held(app, gate)
    started = time.monotonic()
    await pilot.press("f5")
    await wait_for(pilot, lambda: recorder.first(ev.SentenceRendered, started) is not None, timeout=HANG_S,
                   what="a sentence of the long script")
    # from here every network call the link makes (the next group's, or the reconnect after the
    # kill) waits at the gate until it is released
    await wait_for(pilot, gate.arm, timeout=HANG_S, what="no network call in flight")
    killed = time.monotonic()
    server.proc.kill()
    await asyncio.to_thread(server.proc.wait)
    await wait_for(pilot, lambda: gate.held or gate.expired, timeout=HANG_S, what="the link reaching for the server")
    # The link is blocked on the network: the UI still answers keys and runs its timers.
    await ui_answers_while_link_blocked(pilot, gate, editor, ticks_while_held)
    await wait_for(pilot, lambda: recorder.first(ev.Notice, killed, severity="error") is not None, timeout=HANG_S,
                   what="the error notification")
    _, notice = recorder.first(ev.Notice, killed, severity="error")
    # on screen (the offline state, reported before it, is shown by then)
    await wait_for(pilot, lambda: any(n.message == notice.message for n in app._notifications),  # noqa: SLF001
                   what="the notification on screen")
    assert telemetry.engine_state == "offline"
    assert recorder.first(ev.Failure, started) is None
    assert not any(isinstance(s, ErrorModal) for s in app.screen_stack)
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    # every blocking network call of the link ran off the UI thread, those after the kill among them
    assert len(ui_thread) == 1 and gate.threads(armed_only=True), gate.calls
    assert not gate.threads() & ui_thread, "a network call ran on the UI thread"
    assert editor.text == LONG
    app.autosave.save(editor.text)
    assert autosave.read_text(encoding="utf-8") == LONG

    # it comes back on the same port: the studio finds it, and play works again
    servers.append(await asyncio.to_thread(_restart, server.port))  # stopped by the caller
    await wait_for(pilot, lambda: telemetry.engine_state == "ready", timeout=HANG_S, what="the server back")
    again = time.monotonic()
    await pilot.press("f5")
    await wait_for(pilot, lambda: recorder.first(ev.PlaybackStarted, again) is not None, timeout=HANG_S,
                   what="play after the restart")
    await pilot.press("f8")


async def _local(tmp_path: Path) -> None:
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    app = _studio_app(None, tmp_path / "autosave-local.script")
    async with app.run_test(size=(120, 36)) as pilot:
        telemetry = app.main_screen.query_one(Telemetry)
        recorder = Recorder(app)
        await wait_for(pilot, lambda: telemetry.engine_state == "ready", timeout=HANG_S, what="ready")
        app.main_screen.query_one(ScriptEditor).load_text(SCRIPT)
        await _export(pilot, app, recorder, tmp_path / "local.wav")


def test_render_server_equals_local_render(tmp_path: Path, shared_server: Server,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """In process (one torch thread, as the server runs): the network's render and the local one."""
    from omnistudio.cli import main
    from omnistudio.client.engine import RemoteEngine
    from omnistudio.voices.resolve import VoiceRef

    script = tmp_path / "script.txt"
    script.write_text(SCRIPT + "\n[atlas:es] Buenas noches.\n", encoding="utf-8")
    # the prepare phase over the network: the server builds what is missing and reports each voice
    events: list = []
    RemoteEngine(shared_server.url).prepare([(VoiceRef.anchor_of("ruby"), "en"),
                                             (VoiceRef.blend_of("ruby", "atlas", 0.6), "en")], events.append)
    assert [(e.done, e.total, e.voice) for e in events if e.action == "done"] == [
        (1, 2, "ruby"), (2, 2, "ruby+atlas@0.60")]
    runs = {}
    for name, extra in (("remote", ["--server", shared_server.url]), ("local", ["--model", "tiny", "--device", "cpu"])):
        code = main(["render", str(script), "-o", str(tmp_path / f"{name}.wav"), "--seed", str(SEED), "--json", *extra])
        done = capsys.readouterr()
        assert code == 0, done.err[-2000:]
        runs[name] = json.loads(done.out)
    remote, _ = sf.read(str(tmp_path / "remote.wav"), dtype="float32")
    local, _ = sf.read(str(tmp_path / "local.wav"), dtype="float32")
    assert np.array_equal(remote, local)
    assert runs["remote"]["device"].startswith("cpu @ 127.0.0.1:") and runs["local"]["device"] == "cpu"
