"""Pilot: the studio's word highlight and its captioned export (issue 26).

The highlight: with the output's clock held (``virtual_rate=0``), the test moves the play position
itself, 10 ms at a time, and pulls; the word marked in the editor is the written word whose estimated
span holds the position (the captions' syllable estimate, over the sentence's audio), inside the
marked sentence; an edit to the playing sentence leaves the sentence marked alone.

The export: Ctrl+E with SRT, WebVTT and karaoke words ticked writes ``NAME.srt``/``NAME.vtt`` beside
the audio, with cues inside the sidecar's sentence spans, English words measured (a stand-in speech
model, no Whisper), Spanish ones estimated and marked so, and the same files ``omnistudio captions``
makes for that exported file; played again, the English words marked are those measured."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.hearing import stand_in_hearer
from support.studio import Recorder, make_app, wait_for

from omnistudio.captions.estimate import estimate_words
from omnistudio.captions.formats import read_srt, read_vtt
from omnistudio.studio import events as ev
from omnistudio.text import normalize

pytestmark = pytest.mark.timeout(300)
# two spaces and a tab as typed: the marks are on the words as written in the editor
SCRIPT = "Good  evening,\tand welcome to the news.\n[:es] Buenas noches, el 3,2 % sube."
STEP = 240  # frames: 10 ms of play per pull


def test_the_word_being_heard_follows_the_play_position(tiny_engine, voice_roster_file: Path,  # noqa: ANN001
                                                        tmp_path: Path) -> None:
    asyncio.run(_word_follows(tiny_engine, voice_roster_file, tmp_path))


async def _word_follows(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", virtual_rate=0.0)  # a held clock
    app.studio.select("storm")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.query_one(Telemetry).engine_state == "ready", what="engine ready")
        recorder = Recorder(app)
        editor = screen.query_one(ScriptEditor)
        editor.load_text(SCRIPT)
        await pilot.press("f5")
        # the whole take is queued (the ring holds it) while the clock stands still
        await wait_for(pilot, lambda: recorder.first(ev.PlaybackFinished) is not None, what="the take queued")
        assert recorder.first(ev.PlaybackFinished)[1].cancelled is False
        sentences = app.studio.parse(SCRIPT)
        output, steps, marks = app.studio.output, 0, []
        app.pull()
        while True:
            sentence, word = editor.playing, editor.playing_word
            if sentence is None and steps:
                break
            assert sentence is not None, "nothing marked at the start of the take"
            if word is not None:
                assert sentence[0] <= word[0] < word[1] <= sentence[1]  # the word inside its sentence
            marks.append((sentence, word))
            if steps == 150:  # mid-take: the producer types inside the sentence being heard
                at = sentence[0] + 1
                editor.insert("X", editor.document.get_location_from_index(at))
                app.pull()
                assert editor.playing == sentence and editor.playing_word is None  # the sentence alone
                editor.delete(editor.document.get_location_from_index(at),
                              editor.document.get_location_from_index(at + 1))
                app.pull()
                assert editor.playing_word == word  # the same text again: the word again
            output.advance(STEP)
            app.pull()
            steps += 1
        assert steps > 100
    # the words marked, in order, are the written words of the script, each one in its sentence
    runs: list[tuple[tuple[int, int], tuple[int, int], int]] = []
    for sentence, word in marks:
        if word is None:
            continue
        if runs and runs[-1][1] == word:
            runs[-1] = (sentence, word, runs[-1][2] + 1)
        else:
            runs.append((sentence, word, 1))
    said = [SCRIPT[a:b] for _s, (a, b), _n in runs]
    assert said == ["Good", "evening,", "and", "welcome", "to", "the", "news.", "Buenas", "noches,", "el", "3,2 %",
                    "sube."]
    assert [SCRIPT[a:b] for (a, b), _w, _n in runs] == [SCRIPT[s.start:s.end] for s in sentences for _ in
                                                       range(7 if s.lang == "en" else 5)]
    # each word is marked for its share of the sentence: the syllable estimate captions use (to a step)
    for k, s in enumerate(sentences):
        mine = [n for (a, _b), _w, n in runs if a == s.start]
        estimated = estimate_words(normalize(s.text, s.lang), 0.0, 1.0)
        total = sum(mine)
        for n, w in zip(mine, estimated):
            assert abs(n - (w.end - w.start) * total) <= 2, (k, w.text, n, total)


def test_export_writes_captions_beside_the_file(tiny_engine, voice_roster_file: Path, tmp_path: Path,  # noqa: ANN001
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    aligned = stand_in_hearer(monkeypatch)
    out = asyncio.run(_export_with_captions(tiny_engine, voice_roster_file, tmp_path))
    assert [lang for _n, lang, *_ in aligned.calls] == ["en"]  # the model heard English only
    sidecar = json.loads(Path(f"{out}.json").read_text())
    spans = [(s["start_s"], s["end_s"]) for s in sidecar["sentences"]]
    assert len(spans) == 2
    # words: measured where the model hears the language, estimated (and marked so) where it cannot
    assert [{w["estimated"] for w in s["words"]} for s in sidecar["sentences"]] == [{False}, {True}]
    assert [w["text"] for w in sidecar["sentences"][1]["words"]] == ["Buenas", "noches,", "el", "3,2 %", "sube."]
    srt, vtt = out.with_suffix(".srt"), out.with_suffix(".vtt")
    assert sidecar["captions"]["files"] == {"srt": srt.name, "vtt": vtt.name}
    cues = read_srt(srt.read_text(encoding="utf-8"))
    assert cues and [c.lines for c in cues] == [c.lines for c in read_vtt(vtt.read_text(encoding="utf-8"))]
    for cue in cues:  # each cue inside one sentence's span (to the millisecond the files keep)
        assert any(a - 0.0005 <= cue.start < cue.end <= b + 0.0005 for a, b in spans), (cue, spans)
    assert " ".join(" ".join(c.lines) for c in cues) == " ".join(" ".join(SCRIPT.replace("[:es] ", "").split()).split())
    assert any(c.word_starts for c in read_vtt(vtt.read_text(encoding="utf-8")))  # karaoke word times
    # the same files as `omnistudio captions` makes for the exported file (from its sidecar)
    from omnistudio.cli import main

    again = tmp_path / "again"
    again.mkdir()
    assert main(["captions", str(out), "-o", str(again), "--captions-words"]) == 0
    for made in (srt, vtt):
        assert (again / made.name).read_text(encoding="utf-8") == made.read_text(encoding="utf-8")


async def _export_with_captions(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> Path:  # noqa: ANN001
    from textual.widgets import Checkbox, Input

    from omnistudio.screens.export import ExportDialog
    from omnistudio.widgets.script_editor import ScriptEditor
    from omnistudio.widgets.telemetry import Telemetry

    out = tmp_path / "news.wav"
    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", virtual_rate=0.0)  # a held clock
    app.studio.select("storm")
    async with app.run_test(size=(80, 24)) as pilot:  # the dialog fits the smallest terminal
        screen = app.screen
        await wait_for(pilot, lambda: screen.query_one(Telemetry).engine_state == "ready", what="engine ready")
        recorder = Recorder(app)
        screen.query_one(ScriptEditor).load_text(SCRIPT)
        await pilot.press("ctrl+e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog), what="the export dialog")
        dialog = app.screen
        for widget in dialog.query("#dialog *"):  # every control on the 80x24 screen, none cut off
            assert widget.region.right <= 80 and widget.region.bottom <= 24, widget
        path = dialog.query_one("#export-path", Input)
        path.value = str(out)
        dialog.query_one("#cap-words", Checkbox).value = True  # karaoke words alone
        path.focus()
        await pilot.press("enter")
        # karaoke words without WebVTT: said in the dialog, nothing exported
        assert app.screen is dialog and "WebVTT" in str(dialog.query_one("#export-error").render())
        for box in ("#cap-srt", "#cap-vtt"):
            dialog.query_one(box, Checkbox).value = True
        assert dialog.query_one("#cap-measure", Checkbox).value  # measuring is the default
        await pilot.press("enter")
        await wait_for(pilot, lambda: recorder.first(ev.Exported) is not None or recorder.first(ev.Failure) is not None,
                       what="the export")
        assert recorder.first(ev.Failure) is None, recorder.first(ev.Failure)
        report = recorder.first(ev.Exported)[1].report
        assert report.captions == ("news.srt", "news.vtt") and report.measured
        assert report.words_estimated == 5 and report.words == 12
        # the words were measured sentence by sentence, and the telemetry said so
        assert [e.detail for _t, e in recorder.events if isinstance(e, ev.EngineState) and "caption words" in e.detail] \
            == ["caption words 1/2: measuring", "caption words 2/2: measuring"]
        # played again (the seed locked: the same rendering), the English words marked are the measured ones
        await pilot.press("f5")
        await wait_for(pilot, lambda: recorder.first(ev.PlaybackFinished) is not None, what="the take queued")
        first = app.studio.poll().word  # the clock held at the take's first frame
        assert first is not None and first.sentence.startswith("Good") and not first.estimated
        await pilot.press("f8")
        # the next export starts from this one's choices
        await pilot.press("ctrl+e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog), what="the export dialog again")
        assert app.screen.query_one("#cap-words", Checkbox).value and app.screen.query_one("#export-path", Input).value \
            == str(out)
        await pilot.press("escape")
    return out
