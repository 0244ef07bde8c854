"""Pilot: the studio's three jobs bound to the paragraph under the cursor (issue 46).

Auditions read the producer's own paragraph with the highlighted anchor, A/B from the take cache;
assigning an anchor rewrites the paragraph's tag (one undo); the morph slider shows and rewrites the
paragraph's ``[a+b@alpha]``, plays each ratio it rests on and renders its neighbours ahead. The test
roster's anchors speak with their own recordings, so a wrong voice is a different take key."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.studio import anchored_app, wait_for

from omnistudio.script import Blend
from omnistudio.voices.resolve import VoiceRef

pytestmark = pytest.mark.timeout(500)

SCRIPT = ("[valentina:es] Buenas noches. Estas son las noticias.\n"
          "[ruby] The markets closed higher today.\n"
          "[ruby+storm@0.70] And now, the weather.")


def idle(app) -> bool:  # noqa: ANN001
    return app.studio.commands.empty() and app.studio.state == "ready" and not app.studio.rendering_play


async def _ready(pilot, app) -> None:  # noqa: ANN001
    from omnistudio.widgets.telemetry import Telemetry

    await wait_for(pilot, lambda: app.screen.query_one(Telemetry).engine_state == "ready", what="engine ready")


def _cursor(app, row: int, col: int = 12) -> None:  # noqa: ANN001
    from omnistudio.widgets.script_editor import ScriptEditor

    editor = app.screen.query_one(ScriptEditor)
    editor.focus()
    editor.cursor_location = (row, col)


def test_audition_reads_the_paragraph_with_the_highlighted_anchor_and_flips_from_the_cache(
        tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_audition(tiny_engine, voice_roster_file, tmp_path))


async def _audition(engine, roster: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from textual.widgets import OptionList

    from omnistudio.screens.error import ErrorModal
    from omnistudio.widgets.script_editor import ScriptEditor

    app = anchored_app(engine, roster, tmp_path, virtual_rate=50.0)
    async with app.run_test(size=(120, 36)) as pilot:
        await _ready(pilot, app)
        app.screen.query_one(ScriptEditor).load_text(SCRIPT)
        _cursor(app, 0)  # the Spanish paragraph
        options = app.screen.query_one("#anchor-list", OptionList)
        options.highlighted = [o.id for o in options._options].index("storm")  # highlighted, not picked
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: app.studio.last_take is not None and idle(app), what="storm's audition")
        take = app.studio.last_take
        assert [s.voice for s in take.sentences] == [VoiceRef(anchor="storm")] * 2  # the highlighted row
        assert [s.text for s in take.sentences] == ["Buenas noches.", "Estas son las noticias."]
        assert {s.lang for s in take.sentences} == {"es"}  # the paragraph's language
        assert app.studio.anchor == "ruby"  # hearing is not picking

        options.highlighted = [o.id for o in options._options].index("atlas")
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: app.studio.last_take is not take and idle(app), what="atlas's audition")
        assert app.studio.last_take.sentences[0].voice == VoiceRef(anchor="atlas")
        # ctrl+r flips back to storm on that line, from the take cache: nothing is rendered
        misses = app.studio.cache.misses
        last = app.studio.last_take
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: app.studio.last_take is not last and idle(app), what="the flip")
        assert app.studio.last_take.sentences[0].voice == VoiceRef(anchor="storm")
        assert app.studio.cache.misses == misses
        assert not any(isinstance(s, ErrorModal) for s in app.screen_stack)
        # an empty editor: the fixed line, in the language shown in the list
        app.screen.query_one(ScriptEditor).load_text("")
        last = app.studio.last_take
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: app.studio.last_take is not last and idle(app), what="the fixed line")
        assert [s.text for s in app.studio.last_take.sentences] == ["Good evening, and welcome to the news at nine."]


def test_assign_rewrites_the_paragraph_tag_and_undo_restores_it(
        tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_assign(tiny_engine, voice_roster_file, tmp_path))


async def _assign(engine, roster: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from textual.widgets import OptionList

    from omnistudio.widgets.script_editor import ScriptEditor

    app = anchored_app(engine, roster, tmp_path, anchor=None)
    async with app.run_test(size=(120, 36)) as pilot:
        await _ready(pilot, app)
        editor = app.screen.query_one(ScriptEditor)
        editor.load_text(SCRIPT)
        _cursor(app, 1)
        options = app.screen.query_one("#anchor-list", OptionList)
        options.focus()
        options.highlighted = [o.id for o in options._options].index("atlas")
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert editor.text.splitlines()[1] == "[atlas] The markets closed higher today."
        _cursor(app, 0)  # a Spanish paragraph keeps its language in the tag
        options.focus()
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert editor.text.splitlines()[0] == "[atlas:es] Buenas noches. Estas son las noticias."
        await pilot.press("ctrl+z")  # from the picker: the editor's undo, one step per assignment
        await pilot.pause()
        assert editor.text.splitlines()[:2] == ["[valentina:es] Buenas noches. Estas son las noticias.",
                                                "[atlas] The markets closed higher today."]
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert editor.text == SCRIPT


def test_picking_an_anchor_in_a_project_raises_no_error(tiny_engine, voice_roster_file: Path,
                                                         tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_pick_in_project(tiny_engine, voice_roster_file, tmp_path))


async def _pick_in_project(engine, roster: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from textual.widgets import OptionList

    from omnistudio.screens.error import ErrorModal

    app = anchored_app(engine, roster, tmp_path, project=tmp_path / "news.omniproj",
                       script="Good evening.\nAnd now the weather.", virtual_rate=50.0)
    async with app.run_test(size=(120, 36)) as pilot:
        await _ready(pilot, app)
        await pilot.press("f5")
        await wait_for(pilot, lambda: app.takes is not None and app.takes.counts == (1, 1) and idle(app),
                       what="a take per sentence")
        options = app.screen.query_one("#anchor-list", OptionList)
        options.focus()
        options.highlighted = [o.id for o in options._options].index("valentina")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
        assert app.studio.anchor == "valentina"
        assert not any(isinstance(s, ErrorModal) for s in app.screen_stack)


def test_the_slider_shows_and_rewrites_the_paragraph_blend_and_plays_each_ratio(
        tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_slider(tiny_engine, voice_roster_file, tmp_path))


async def _slider(engine, roster: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from textual.widgets import Label

    from omnistudio.widgets.morph_slider import MorphSlider
    from omnistudio.widgets.script_editor import ScriptEditor

    app = anchored_app(engine, roster, tmp_path, virtual_rate=50.0)
    async with app.run_test(size=(160, 40)) as pilot:
        await _ready(pilot, app)
        editor = app.screen.query_one(ScriptEditor)
        editor.load_text(SCRIPT)
        slider = app.screen.query_one(MorphSlider)
        _cursor(app, 2)
        await pilot.pause()
        assert slider.value == 0.70  # the paragraph's ratio
        assert "ruby ◀▶ storm" in str(app.screen.query_one("#morph-label", Label).render())
        _cursor(app, 1)
        await pilot.pause()
        assert "ruby ◀▶ —" in str(app.screen.query_one("#morph-label", Label).render())
        _cursor(app, 2)
        await pilot.pause()
        assert slider.value == 0.70

        # one gesture of three steps: the tag is rewritten once, at rest, and the ratio is played
        slider.focus()
        await pilot.press("right", "right", "right")
        morph = app.screen.morph
        await wait_for(pilot, lambda: morph.rests == 1, what="the slider at rest")
        assert editor.text.splitlines()[2] == "[ruby+storm@0.85] And now, the weather."
        await wait_for(pilot, lambda: app.studio.last_take is not None and idle(app), what="0.85 played")
        assert app.studio.last_take.sentences[0].voice == VoiceRef(blend=Blend("ruby", "storm", 0.85))
        assert app.studio.last_take.sentences[0].text == "And now, the weather."
        # its neighbours are rendered ahead, so the next step is a cache hit
        prebuild = app.studio.prebuild
        await wait_for(pilot, lambda: prebuild.settled() and len(prebuild.rendered) == 2, what="neighbours ahead")
        assert {h.voice.blend.alpha for h in prebuild.rendered} == {0.80, 0.90}
        misses, last = app.studio.cache.misses, app.studio.last_take
        await pilot.press("right")
        await wait_for(pilot, lambda: morph.rests == 2 and app.studio.last_take is not last and idle(app),
                       what="0.90 played")
        assert app.studio.last_take.sentences[0].voice.blend.alpha == 0.90
        assert app.studio.cache.misses == misses  # a pre-rendered neighbour: nothing rendered
        # a fine step (shift): its neighbours are a fine step away, so the next fine step is a cache hit too
        await pilot.press("shift+right")
        await wait_for(pilot, lambda: morph.rests == 3 and idle(app), what="0.91")
        await wait_for(pilot, lambda: prebuild.settled() and 0.92 in {h.voice.blend.alpha for h in prebuild.rendered},
                       what="fine neighbours ahead")
        misses, last = app.studio.cache.misses, app.studio.last_take
        await pilot.press("shift+right")
        await wait_for(pilot, lambda: morph.rests == 4 and app.studio.last_take is not last and idle(app), what="0.92")
        assert app.studio.last_take.sentences[0].voice.blend.alpha == 0.92 and app.studio.cache.misses == misses
        # the end of the slider is the first anchor alone, still naming the partner
        await pilot.press("end")
        await wait_for(pilot, lambda: morph.rests == 5 and idle(app), what="1.00")
        assert editor.text.splitlines()[2] == "[ruby+storm@1.00] And now, the weather."
        assert app.studio.last_take.sentences[0].voice == VoiceRef(anchor="ruby")
        # one undo per gesture
        editor.focus()
        await pilot.press("ctrl+z")
        assert editor.text.splitlines()[2] == "[ruby+storm@0.92] And now, the weather."
        await pilot.press("ctrl+z", "ctrl+z", "ctrl+z", "ctrl+z")
        assert editor.text == SCRIPT
        await pilot.pause()
        assert slider.value == 0.70  # the slider follows the script


def test_the_editor_follows_the_spoken_line(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_follows(tiny_engine, voice_roster_file, tmp_path))


async def _follows(engine, roster: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.widgets.script_editor import ScriptEditor

    app = anchored_app(engine, roster, tmp_path, virtual_rate=50.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(pilot, app)
        editor = app.screen.query_one(ScriptEditor)
        editor.load_text("\n".join(f"Line {n}." for n in range(1, 31)))
        editor.focus()
        editor.move_cursor((0, 0))
        await pilot.press("f5")
        text = editor.text
        await wait_for(pilot, lambda: editor.playing is not None and text.count("\n", 0, editor.playing[0]) >= 25,
                       what="the read-through at line 26")
        row = text.count("\n", 0, editor.playing[0])
        top = editor.scroll_offset.y
        assert top > 0 and top <= row < top + editor.content_size.height  # the spoken line is in view
        assert editor.cursor_location == (0, 0)  # the cursor stays where the producer left it


def test_tab_reaches_the_slider_before_the_take_strip_and_fast_typing_loses_nothing(
        tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_tab_and_typing(tiny_engine, voice_roster_file, tmp_path))


async def _tab_and_typing(engine, roster: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from textual.widgets import Input

    from omnistudio.widgets.morph_slider import MorphSlider
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.take_strip import TakeStrip

    app = anchored_app(engine, roster, tmp_path, anchor=None)
    async with app.run_test(size=(160, 40)) as pilot:
        await _ready(pilot, app)
        app.screen.query_one(ScriptEditor).focus()
        seen: list[object] = []
        for _ in range(12):
            await pilot.press("tab")
            seen.append(type(app.focused))
        assert MorphSlider in seen and TakeStrip in seen
        assert seen.index(MorphSlider) < seen.index(TakeStrip)

        typed = "abcdefghijklmnopqrstuvwxyz0123456789wxyz"  # 40 characters at full speed
        field = app.screen.query_one("#anchor-filter", Input)
        field.focus()
        await pilot.press(*typed)
        assert field.value == typed
        await pilot.press("ctrl+e")
        await pilot.pause()
        path = app.screen.query_one("#export-path", Input)
        path.focus()
        path.value = ""
        await pilot.press(*typed)
        assert path.value == typed


def test_the_export_dialog_names_the_project_and_chooses_the_loudness_rule(
        tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_export_rule(tiny_engine, voice_roster_file, tmp_path))


async def _export_rule(engine, roster: Path, tmp_path: Path) -> None:  # noqa: ANN001
    import soundfile as sf
    from textual.widgets import Input, Label, Select

    from omnistudio.audio.loudness import measure
    from omnistudio.widgets.lufs_meter import LufsMeter

    app = anchored_app(engine, roster, tmp_path, project=tmp_path / "news.omniproj",
                       script="Good evening.\nAnd now the weather.", virtual_rate=50.0)
    async with app.run_test(size=(120, 36)) as pilot:
        await _ready(pilot, app)
        await pilot.press("ctrl+e")
        await pilot.pause()
        dialog = app.screen
        assert dialog.query_one("#export-path", Input).value == str(tmp_path / "news.wav")  # the project's name
        assert dialog.query_one("#export-profile", Select).value == "ebu"  # the settings' rule
        dialog.query_one("#export-profile", Select).value = "podcast"
        await pilot.pause()
        assert "-16 LUFS" in str(dialog.query_one("#export-note", Label).render())
        dialog.query_one("#export-path", Input).focus()
        await pilot.press("enter")
        out = tmp_path / "news.wav"
        await wait_for(pilot, lambda: out.exists() and Path(str(out) + ".json").exists(), what="the export")
        assert app.studio.settings.rule().key == "podcast"  # the meter, the monitor and later exports agree
        assert app.screen.query_one(LufsMeter).target == -16.0
        await pilot.press("ctrl+e")  # the file it is made in: 48 kHz 16-bit dual-mono, to EBU R128
        await pilot.pause()
        dialog = app.screen
        dialog.query_one("#export-profile", Select).value = "ebu"
        dialog.query_one("#export-format", Select).value = "2/48000/16"
        path = dialog.query_one("#export-path", Input)
        path.value = str(tmp_path / "playout.wav")
        path.focus()
        await pilot.press("enter")
        playout = tmp_path / "playout.wav"
        await wait_for(pilot, lambda: playout.exists() and Path(str(playout) + ".json").exists(), what="the export")
    data, rate = sf.read(str(out), dtype="float32")
    assert abs(measure(data if data.ndim == 1 else data[:, 0], rate).integrated_lufs - (-16.0)) < 0.5
    info = sf.info(str(playout))
    assert (info.samplerate, info.channels, info.subtype) == (48_000, 2, "PCM_16")
    data, rate = sf.read(str(playout), dtype="float32")
    assert abs(measure(data, rate).integrated_lufs - (-23.0)) < 0.2  # two channels: every meter reads -23


def test_a_duo_preset_is_kept_in_the_project_offered_in_the_picker_and_read_as_a_tag(
        tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_presets(tiny_engine, voice_roster_file, tmp_path))


async def _presets(engine, roster: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from textual.widgets import Input, Label, OptionList

    from omnistudio.projects.presets import read_presets
    from omnistudio.widgets.morph_slider import MorphSlider
    from omnistudio.widgets.script_editor import ScriptEditor

    path = tmp_path / "news.omniproj"
    script = "[ruby+storm@0.65] Good morning.\n[ruby] And now the weather."
    app = anchored_app(engine, roster, tmp_path, project=path, script=script, virtual_rate=50.0)
    async with app.run_test(size=(160, 40)) as pilot:
        await _ready(pilot, app)
        _cursor(app, 0)
        await pilot.press("alt+p")
        await pilot.pause()
        app.screen.query_one("#export-path", Input).value = "morning"
        await pilot.press("enter")
        await pilot.pause()
        await wait_for(pilot, lambda: read_presets(path)[0] == {"morning": Blend("ruby", "storm", 0.65)},
                       what="the preset written to the project")
        options = app.screen.query_one("#anchor-list", OptionList)
        assert "morning" in [o.id for o in options._options]
        # the preset as a tag: the paragraph reads with its blend, and the slider shows it
        editor = app.screen.query_one(ScriptEditor)
        editor.load_text("[morning] Good morning.\n[ruby] And now the weather.")
        _cursor(app, 0)
        await pilot.press("f6")
        await wait_for(pilot, lambda: app.studio.last_take is not None and idle(app), what="the preset's line played")
        assert app.studio.last_take.sentences[0].voice == VoiceRef(blend=Blend("ruby", "storm", 0.65))
        assert app.screen.query_one(MorphSlider).value == 0.65
    # after a restart the project offers it; picking it sets the slider's partner and ratio
    again = anchored_app(engine, roster, tmp_path, anchor=None, project=path)
    async with again.run_test(size=(160, 40)) as pilot:
        await _ready(pilot, again)
        options = again.screen.query_one("#anchor-list", OptionList)
        options.focus()
        options.highlighted = [o.id for o in options._options].index("morning")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
        studio = again.studio
        assert (studio.anchor, studio.partner, studio.blend) == ("ruby", "storm", Blend("ruby", "storm", 0.65))
        assert again.screen.query_one(MorphSlider).value == 0.65
        _cursor(again, 1)  # a plain paragraph: the label names the preset's partner
        await pilot.pause()
        assert "ruby ◀▶ storm" in str(again.screen.query_one("#morph-label", Label).render())
