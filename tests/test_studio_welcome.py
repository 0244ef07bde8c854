"""First start is inviting: an anchor selected, an example script (two anchors, a blend, en + es) that
plays with F5; offline with no model named, the studio opens on tiny with a demo banner."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

from support.studio import make_app, wait_for
from support.wait import HANG_S

from omnistudio.config import DEFAULT_MODEL
from omnistudio.script import parse_script
from omnistudio.studio.welcome import DEMO_BANNER, EXAMPLE_SCRIPT, studio_model


def test_example_script_has_two_anchors_a_blend_and_both_languages() -> None:
    script = parse_script(EXAMPLE_SCRIPT, "en", speakers=["ruby", "valentina"])
    plain = {s.speaker for s in script.sentences if s.blend is None}
    blends = {s.blend for s in script.sentences if s.blend is not None}
    assert plain == {"ruby", "valentina"} and len(blends) == 1
    assert {s.lang for s in script.sentences} == {"en", "es"}


def test_the_studio_opens_the_real_model_unless_offline(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("OMNISTUDIO_MODEL", raising=False)
    online, offline = (lambda: True), (lambda: False)
    cached, fresh = (lambda _repo: True), (lambda _repo: False)
    assert studio_model(None, online, fresh) == (DEFAULT_MODEL, None)  # downloaded with progress on first use
    assert studio_model(None, offline, cached) == (DEFAULT_MODEL, None)  # cached: no hub needed
    assert studio_model(None, offline, fresh) == ("tiny", DEMO_BANNER)
    assert studio_model("/models/omnivoice", offline, fresh) == ("/models/omnivoice", None)  # as given
    monkeypatch.setenv("OMNISTUDIO_MODEL", "mid")
    assert studio_model(None, offline, fresh) == ("mid", None)
    assert "noise, not speech" in DEMO_BANNER and "--model" in DEMO_BANNER


def test_first_start_selects_an_anchor_and_plays_the_example(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    async def run() -> None:
        app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", welcome=True, banner=DEMO_BANNER,
                       virtual_rate=20.0)
        async with app.run_test(size=(120, 34)) as pilot:
            screen = app.main_screen
            assert screen.query_one(ScriptEditor).text == EXAMPLE_SCRIPT
            assert app.studio.anchor == "ruby"
            assert "noise, not speech" in str(screen.query_one("#banner").render())
            telemetry = screen.query_one(Telemetry)
            await wait_for(pilot, lambda: telemetry.engine_state == "ready", what="ready")
            await pilot.press("f5")
            await wait_for(pilot, lambda: not math.isnan(telemetry.ttfa), timeout=HANG_S, what="the example playing")
            assert [s.voice.key() for s in app.studio.last_take.sentences][-1] == "ruby+valentina@0.60"
            await pilot.press("f8")

    asyncio.run(run())
