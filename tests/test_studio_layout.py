"""Pilot: the studio's layout at 80x24, 120x40 and 200x60 (issue 28), in the states the snapshots show
(tests/test_studio_snapshots.py: the main screen while playing, the settings, the export dialog).

At each size: the editor keeps at least 60% of the width; nothing is cut off (every widget shown lies
inside the screen and inside its parent) and no two siblings overlap; below 160 columns the anchor list
and the meter fold into one side panel that F12 switches, and every function stays reachable by
keyboard (every studio key bound, each panel's widgets in the focus chain once F12 shows it).

Resizing while playing: with the output's clock held, the test plays the take itself and resizes the
terminal between blocks (through the fold, both ways); what the output played is, sample for sample,
what the take queued, and the take was played once, to its end.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from support.studio import (SCRIPT, SIZES, Recorder, layout_faults, make_app, settled_layout, show_playing,
                            wait_for)

pytestmark = pytest.mark.timeout(300)
EDITOR_SHARE = 0.6  # the issue's: the editor always keeps at least 60% of the width


def editor_share(screen) -> float:  # noqa: ANN001
    from omnistudio.widgets.script_editor import ScriptEditor

    return screen.query_one(ScriptEditor).region.width / screen.region.width


@pytest.mark.parametrize("size", SIZES)
def test_layout_fits_and_every_function_is_reachable(tiny_engine, voice_roster_file: Path, tmp_path: Path,  # noqa: ANN001
                                                     size: str) -> None:
    asyncio.run(_layout_fits(tiny_engine, voice_roster_file, tmp_path, SIZES[size]))


async def _layout_fits(tiny_engine, voice_roster_file: Path, tmp_path: Path, size: tuple[int, int]) -> None:  # noqa: ANN001
    from omnistudio.screens.export import ExportDialog
    from omnistudio.screens.main import BINDINGS
    from omnistudio.screens.settings import SettingsScreen

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", live=False)
    async with app.run_test(size=size) as pilot:
        await show_playing(pilot)  # the snapshot's state: on a narrow screen, the meter panel
        screen = app.main_screen
        narrow = size[0] < 160
        assert screen.narrow is narrow
        chains: set[str] = set()
        for i, panel in enumerate(("meter", "anchors") if narrow else ("both",)):
            if i:
                await pilot.press("f12")  # the other panel
                await settled_layout(pilot, *size)
            assert screen.panel == panel or not narrow
            assert layout_faults(screen) == [], panel
            assert editor_share(screen) >= EDITOR_SHARE, (panel, screen.query_one("#editor").region)
            shown = {w.id for w in screen.query("#picker, #side") if w.region.area}
            assert shown == ({"side"} if panel == "meter" else {"picker"} if panel == "anchors" else {"picker", "side"})
            chains |= {w.id for w in screen.focus_chain if w.id}
            # every studio key is bound here (F12 only where there is a panel to switch to)
            active = {b.binding.action for b in screen.active_bindings.values()}
            panel_keys = {b.action for b in BINDINGS if b.action.startswith("panel(")}
            assert {b.action for b in BINDINGS} - panel_keys <= active
            assert active & panel_keys == ({f"panel('{'anchors' if panel == 'meter' else 'meter'}')"} if narrow else set())
        assert {"editor", "anchor-filter", "anchor-list", "morph"} <= chains
        if narrow:
            assert app.focused is not None and app.focused.id == "anchor-list"  # F12 to the anchors: the list
        # the keys of the focus's context in the footer (F1, the keys' sheet, among them), none of them cut off
        # (layout_faults above); on a wide screen every key; the rest in F1's sheet and the palette
        from omnistudio.widgets.footer import StudioFooter, action_name

        bar = screen.query_one(StudioFooter)
        footer = {action_name(k.action) for k in screen.query("FooterKey") if k.region.area}
        wanted = bar.wanted(bar.context()) & {action_name(b.action) for b in BINDINGS} - {"panel"}
        assert "keys" in footer and wanted <= footer, (wanted, footer)
        if size[0] >= 160:
            assert {"play", "stop", "export", "settings"} <= footer
        for key, dialog in (("f2", SettingsScreen), ("ctrl+e", ExportDialog)):
            await pilot.press(key)
            await wait_for(pilot, lambda: isinstance(app.screen, dialog)  # noqa: B023 - waited for here
                           and all(b.region.area for b in app.screen.query("Button")), what=f"the dialog of {key}")
            assert layout_faults(app.screen) == [], key
            assert len(app.screen.query("Button")) == 2  # confirm and cancel, inside the dialog (above)
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is screen, what="back to the main screen")


def test_resizing_while_playing_changes_nothing_in_the_audio(tiny_engine, voice_roster_file: Path,  # noqa: ANN001
                                                             tmp_path: Path) -> None:
    asyncio.run(_resize_while_playing(tiny_engine, voice_roster_file, tmp_path))


async def _resize_while_playing(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.screens.main import WIDE
    from omnistudio.studio import events as ev
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", virtual_rate=0.0)  # a held clock
    app.studio.select("ruby")
    async with app.run_test(size=(200, 60)) as pilot:
        screen = app.main_screen
        await wait_for(pilot, lambda: screen.query_one(Telemetry).engine_state == "ready", what="engine ready")
        player, output = app.studio.player, app.studio.output
        queued: list[np.ndarray] = []
        write = player.write

        def recorded_write(pcm, timeout=None):  # noqa: ANN001, ANN202
            done = write(pcm, timeout)
            queued.append(np.asarray(pcm, dtype=np.float32).reshape(-1)[:done].copy())
            return done

        player.write = recorded_write
        recorder = Recorder(app)
        screen.query_one(ScriptEditor).load_text(SCRIPT)
        await pilot.press("f5")
        # the whole take is queued (the ring holds it) while the clock stands still
        await wait_for(pilot, lambda: recorder.first(ev.PlaybackFinished) is not None, what="the take queued")
        total = sum(len(q) for q in queued)
        played: list[np.ndarray] = []

        def play_block() -> None:  # the device's next block, kept
            output.advance(output.frames)
            played.append(output._buf[:output.frames, 0].copy())  # noqa: SLF001 - what the device was given

        while sum(len(p) for p in played) < total // 3:
            play_block()
        # through the fold and back, both ways, a block played between each
        for width, height in ((80, 24), (120, 40), (WIDE, 40), (WIDE - 1, 40), (200, 60), (80, 24), (200, 60)):
            await pilot.resize_terminal(width, height)
            await settled_layout(pilot, width, height)
            assert screen.narrow is (width < WIDE)
            assert editor_share(screen) >= EDITOR_SHARE, (width, height)
            play_block()
        while player.ring.available > 0:
            play_block()
        play_block()  # one block past the end: silence
    heard, take = np.concatenate(played), np.concatenate(queued)
    assert len(take) > app.studio.player.sample_rate  # a real take (over a second)
    assert np.array_equal(heard[:len(take)], take), "the output did not play what the take queued"
    assert not heard[len(take):].any()
    assert player.stats.underruns == 0
    starts = [e for _t, e in recorder.events if isinstance(e, ev.PlaybackStarted)]
    finished = [e for _t, e in recorder.events if isinstance(e, ev.PlaybackFinished)]
    assert len(starts) == 1 and len(finished) == 1 and finished[0].cancelled is False
