"""Pilot: the take strip under the editor (issue 28, "see the take"), at 80x24.

On a held virtual clock the test plays the take itself, one output block at a time, and pulls the UI's
state after each as its timer would: the strip's play position is the take's frame heard, the ``▲``
drawn is in that frame's column, and the loudness history gains one point a block, at that frame,
holding the live meter's own short-term reading (the LUFS meter's). Then the take is exported: the
waveform's columns are the peaks of the exported file's own samples, column by column, and its sentence
marks are the file's sentence spans (the sidecar's). A click on a sentence in the strip, and Ctrl+G then
←/→ and Enter, move the editor's cursor to that sentence's start.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from support.studio import SCRIPT, Recorder, make_app, until_ready, wait_for

pytestmark = pytest.mark.timeout(300)
SIZE = (80, 24)


async def _played(pilot, app):  # noqa: ANN001, ANN202
    """F5 on the test script with the clock held: returns once the whole take is queued and finished."""
    from omnistudio.studio import events as ev
    from omnistudio.widgets.script_editor import ScriptEditor

    await until_ready(pilot)
    recorder = Recorder(app)
    editor = app.main_screen.query_one(ScriptEditor)
    editor.load_text(SCRIPT)
    editor.focus()
    await pilot.press("f5")
    await wait_for(pilot, lambda: recorder.first(ev.PlaybackFinished) is not None, what="the take queued")
    return recorder, editor


def test_strip_follows_the_play_position_and_draws_the_exported_samples(tiny_engine, voice_roster_file: Path,  # noqa: ANN001
                                                                        tmp_path: Path) -> None:
    asyncio.run(_follows_and_exports(tiny_engine, voice_roster_file, tmp_path))


async def _follows_and_exports(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    import soundfile as sf
    from textual.widgets import Sparkline

    from omnistudio.audio.export import sidecar_path
    from omnistudio.studio import events as ev
    from omnistudio.studio.take_view import PEAK_FRAMES, column_edges
    from omnistudio.widgets.lufs_meter import LufsMeter
    from omnistudio.widgets.take_strip import LoudnessHistory, SentenceMarks, TakeStrip

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", virtual_rate=0.0)  # a held clock
    app.studio.select("ruby")
    async with app.run_test(size=SIZE) as pilot:
        recorder, editor = await _played(pilot, app)
        screen = app.main_screen
        strip, marks = screen.query_one(TakeStrip), screen.query_one(SentenceMarks)
        history = screen.query_one(LoudnessHistory)
        output, view = app.studio.output, app.studio.view
        frames = view.shape.frames
        width = marks.size.width
        assert frames > app.studio.player.sample_rate and width > 40  # a real take (over a second), a real strip
        assert len(view.shape.sentences) == 3
        played, columns = 0, set()
        while played < frames:
            output.advance(output.frames)
            played = min(frames, played + output.frames)
            app.pull()  # what the UI timer does
            assert strip.position == played
            column = view.shape.column_of(played, width)
            drawn = marks.render_line(0).text
            assert drawn[column] == "▲" or column in {view.shape.column_of(s, width) for s, _e, _i in view.shape.sentences}
            assert drawn.index("▲") == column if "▲" in drawn else True
            columns.add(column)
            points = history.points
            assert len(points) == -(-played // output.frames) and points[-1].frame == played
            assert points[-1].short_term == app.studio.meter.short_term() == screen.query_one(LufsMeter).short_term
        assert len(columns) >= width - 1  # the position crossed the whole strip, column by column
        assert history.frames == frames

        # the take's finishing pass (engine thread, after its last sentence) gives way to a waiting command:
        # let it finish before the export is asked for, as a producer's export comes seconds later
        await wait_for(pilot, lambda: not view.shape.live, what="the take's finished shape")
        path = tmp_path / "take.wav"
        from omnistudio.audio.profiles import DeliveryFormat

        # the strip draws the rule's file at the engine's rate: the export at that rate is what it drew
        app.studio.export(editor.text, path, delivery=DeliveryFormat(2, app.studio.player.sample_rate, 32))
        await wait_for(pilot, lambda: recorder.first(ev.Exported) is not None, what="the export")
        await pilot.pause()
        samples = sf.read(str(path), dtype="float32")[0][:, 0]
        assert len(samples) == frames == view.shape.frames
        edges = column_edges(len(samples), width)
        from_file = [float(np.abs(samples[a:b]).max()) if b > a else 0.0 for a, b in zip(edges[:-1], edges[1:])]
        assert len(strip.query_one(Sparkline).data) == width
        np.testing.assert_array_equal(np.asarray(strip.peaks, dtype=np.float32), np.asarray(from_file, dtype=np.float32))
        assert all(a % PEAK_FRAMES == 0 or a == len(samples) for a in edges)
        rate = app.studio.player.sample_rate
        sidecar = json.loads(sidecar_path(path).read_text())
        spans = [(round(row["start_s"] * rate), round(row["end_s"] * rate)) for row in sidecar["sentences"]]
        for (start, end, _index), (s, e) in zip(view.shape.sentences, spans, strict=True):
            assert abs(start - s) <= 3 and abs(end - e) <= 3  # the sidecar rounds to 0.1 ms (2.4 frames)


def test_a_click_or_a_key_on_a_sentence_moves_the_cursor_there(tiny_engine, voice_roster_file: Path,  # noqa: ANN001
                                                               tmp_path: Path) -> None:
    asyncio.run(_click_and_keys(tiny_engine, voice_roster_file, tmp_path))


async def _click_and_keys(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.widgets.take_strip import SentenceMarks, TakeStrip

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", virtual_rate=0.0)
    app.studio.select("ruby")
    async with app.run_test(size=SIZE) as pilot:
        _recorder, editor = await _played(pilot, app)
        screen = app.main_screen
        shape = app.studio.view.shape
        await wait_for(pilot, lambda: screen.query_one(TakeStrip).shape is shape, what="the strip drawn")
        width = screen.query_one(SentenceMarks).size.width
        starts = {index: app.sentences[index][0] for _s, _e, index in shape.sentences}
        assert sorted(starts.values())[1:] == [SCRIPT.index("Here is"), SCRIPT.index("And now")]
        for start, end, index in shape.sentences:  # a click in the middle of each sentence, waveform and marks
            for target in ("#wave", "#marks"):
                editor.move_cursor(editor.document.end)
                await pilot.click(target, offset=(shape.column_of((start + end) // 2, width), 0))
                await wait_for(pilot, lambda: editor.cursor_offset == starts[index],  # noqa: B023 - waited for here
                               what=f"the cursor at sentence {index + 1} after a click on {target}")
        order = [index for _s, _e, index in shape.sentences]
        editor.move_cursor(editor.document.end)
        await pilot.press("ctrl+g")
        assert app.focused is screen.query_one(TakeStrip)
        await pilot.press("left", "enter")  # the position is at the end: the last sentence, then one before it
        await wait_for(pilot, lambda: editor.cursor_offset == starts[order[-2]], what="the cursor after ←, enter")
        assert app.focused is editor
        await pilot.press("ctrl+g", "left", "left", "left", "enter")
        await wait_for(pilot, lambda: editor.cursor_offset == starts[order[0]], what="the cursor at the first sentence")
        await pilot.press("ctrl+g", "right", "enter")
        await wait_for(pilot, lambda: editor.cursor_offset == starts[order[1]], what="the cursor at the second sentence")
