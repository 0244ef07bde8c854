"""`render --captions` and `omnistudio captions`: caption files written with the audio (all staged, then
renamed together), cues inside the sidecar's sentence spans, words in the sidecar (measured where the
speech model hears the language, else estimated); `render --project`, plain `render` and the `captions`
command give the same captions; every bad input is one line and no file.

The speech model here is a stand-in that hears English only (its alignment: ``Aligned``), so no Whisper
loads (the aligner itself is tested in test_align.py, whisper tier)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omnistudio.captions.cues import CaptionLimits
from omnistudio.captions.formats import read_srt, read_vtt
from omnistudio.cli import main
from support.audio import REF_TEXT
from support.cli import one_line_error
from support.hearing import Aligned
from support.hearing import stand_in_hearer as stand_in_model

SCRIPT = ("Good evening. The minister said on Tuesday that the new budget, which parliament will debate next "
          "week, includes cuts to health and education.\n[:es] Buenas noches, Sr. García, y bienvenidos.\n")


def render(args: list[str], ref_wav: Path) -> list[str]:
    return ["render", *args, "--model", "tiny", "--device", "cpu", "--num-step", "2",
            "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT]


@pytest.fixture()
def aligned(monkeypatch: pytest.MonkeyPatch) -> Aligned:
    return stand_in_model(monkeypatch)


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory, ref_wav: Path) -> dict[str, Any]:
    """One plain render and one --project render of the same script and seed, both with captions."""
    folder = tmp_path_factory.mktemp("captions")
    script = folder / "s.txt"
    script.write_text(SCRIPT, encoding="utf-8")
    words = ["--captions", "srt,vtt", "--captions-words", "--seed", "3"]
    with pytest.MonkeyPatch.context() as patch:
        aligned = stand_in_model(patch)
        assert main(render([str(script), "-o", str(folder / "plain.wav"), *words], ref_wav)) == 0
        plain_calls = list(aligned.calls)
        assert main(render([str(script), "-o", str(folder / "proj.wav"), "--project", str(folder / "news.omniproj"),
                            *words], ref_wav)) == 0
    return {"folder": folder, "script": script, "plain": folder / "plain.wav", "project": folder / "news.omniproj",
            "proj": folder / "proj.wav", "calls": plain_calls}


def _sidecar(wav: Path) -> dict[str, Any]:
    return json.loads(wav.with_name(wav.name + ".json").read_text())


def test_render_writes_both_caption_files_beside_the_audio(renders: dict[str, Any]) -> None:
    folder, wav = renders["folder"], renders["plain"]
    assert {"plain.srt", "plain.vtt", "plain.wav", "plain.wav.json"} <= {p.name for p in folder.iterdir()}
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temp file left
    sidecar = _sidecar(wav)
    spans = sidecar["sentences"]
    assert len(spans) == 3 and sidecar["captions"]["files"] == {"srt": "plain.srt", "vtt": "plain.vtt"}
    assert sidecar["captions"]["limits"]["max_line_chars"] == 42 and sidecar["captions"]["vtt_words"] is True
    texts = [row["text"] for row in sidecar["timings"]["sentences"]]
    for span, text in zip(spans, texts):  # the sidecar's words: the written words, inside the span
        assert [w["text"] for w in span["words"]] == text.split()
        assert all(span["start_s"] - 1e-3 <= w["start"] <= w["end"] <= span["end_s"] + 1e-3 for w in span["words"])
    # measured where the model hears the language (English), estimated where it cannot (Spanish)
    assert [{(w["estimated"], w["confidence"]) for w in span["words"]} for span in spans] == [
        {(False, 0.8)}, {(False, 0.8)}, {(True, None)}]
    # the aligner got each English sentence's own audio, placed at its span
    assert [(lang, offset, span) for _n, lang, offset, span in renders["calls"]] == [
        ("en", s["start_s"], (s["start_s"], s["end_s"])) for s in spans[:2]]
    assert [n for n, *_ in renders["calls"]] == [round(r["audio_s"] * 24_000) for r in sidecar["timings"]["sentences"][:2]]
    srt = read_srt(wav.with_suffix(".srt").read_text(encoding="utf-8"))
    vtt = read_vtt(wav.with_suffix(".vtt").read_text(encoding="utf-8"))
    assert [(c.start, c.end, c.lines) for c in srt] == [(c.start, c.end, c.lines) for c in vtt]
    assert " ".join(line for c in srt for line in c.lines) == " ".join(" ".join(texts).split())
    limits = CaptionLimits()
    for cue in srt:  # inside its sentence's exact span; lines under the limits
        assert any(s["start_s"] - 1e-3 <= cue.start < cue.end <= s["end_s"] + 1e-3 for s in spans), cue
        assert len(cue.lines) <= limits.max_lines and all(len(line) <= limits.max_line_chars for line in cue.lines)
        assert cue.end - cue.start <= limits.max_duration_s + 1e-3
    assert any(c.word_starts for c in vtt)
    for cue in vtt:  # karaoke timestamps rising, inside the cue
        assert list(cue.word_starts) == sorted(set(cue.word_starts))
        assert all(cue.start < t < cue.end for t in cue.word_starts)


def test_project_render_and_the_captions_command_give_the_same_captions(
        renders: dict[str, Any], aligned: Aligned, capsys: pytest.CaptureFixture[str]) -> None:
    plain, proj = renders["plain"], renders["proj"]
    for fmt in ("srt", "vtt"):
        assert proj.with_suffix(f".{fmt}").read_bytes() == plain.with_suffix(f".{fmt}").read_bytes()
    assert [s["words"] for s in _sidecar(proj)["sentences"]] == [s["words"] for s in _sidecar(plain)["sentences"]]
    # the project's chosen takes carry their words, in seconds from the take's start: the ones the
    # render measured (English), else the syllable estimate over the take (Spanish)
    from omnistudio.projects.project import Project

    project = Project.open(renders["project"])
    for row, line in zip(_sidecar(proj)["sentences"], project.lines):
        take = line.chosen_take
        assert take is not None and [w["text"] for w in take.words] == line.text.split()
        if not row["words"][0]["estimated"]:
            assert [(w["start"], w["end"]) for w in take.words] == [
                (round(w["start"] - row["start_s"], 3), round(w["end"] - row["start_s"], 3)) for w in row["words"]]
        assert all(w["estimated"] == row["words"][0]["estimated"] for w in take.words)
        assert all(0.0 <= w["start"] <= w["end"] <= take.duration_s + 1e-3 for w in take.words)
    # the captions command on the take that exists (from its sidecar), and on the project's chosen takes
    out = renders["folder"] / "again"
    out.mkdir()
    assert main(["captions", str(plain), "-o", str(out), "--captions-words"]) == 0
    assert aligned.calls == []  # the words the render measured are in its sidecar
    assert main(["captions", str(renders["project"]), "-o", str(out), "--captions-words", "--json"]) == 0
    assert [lang for _n, lang, *_ in aligned.calls] == ["en", "en"]  # the chosen takes, measured as render did
    said = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert said["files"] == [str(out / "news.srt"), str(out / "news.vtt")] and said["words_estimated"] is False
    for name in ("plain", "news"):
        for fmt in ("srt", "vtt"):
            assert (out / f"{name}.{fmt}").read_bytes() == plain.with_suffix(f".{fmt}").read_bytes(), (name, fmt)


def test_captions_command_without_a_sidecar_spreads_the_text_over_the_file(
        renders: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import soundfile as sf

    wav = tmp_path / "take.wav"
    shutil.copy(renders["plain"], wav)
    duration = sf.info(str(wav)).duration
    first, second = SCRIPT.splitlines()[0].split(". ", 1)
    # one sentence: its span is the whole file
    assert main(["captions", str(wav), "--text", second, "--format", "srt", "--captions-estimate"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "take.srt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["take.srt", "take.wav"]
    cues = read_srt((tmp_path / "take.srt").read_text(encoding="utf-8"))
    assert " ".join(line for c in cues for line in c.lines) == second
    assert cues[0].start == 0.0 and cues[-1].end == pytest.approx(duration, abs=1e-3)
    # several sentences (a script, tags and all) share the file by written length, each cue in its share
    script = tmp_path / "two.txt"
    script.write_text(f"{first}.\n[:es] {second}\n", encoding="utf-8")
    assert main(["captions", str(wav), "--script", str(script), "--format", "vtt", "--captions-estimate"]) == 0
    cues = read_vtt((tmp_path / "take.vtt").read_text(encoding="utf-8"))
    assert cues[0].lines == (f"{first}.",)
    share = duration * len(first + ".") / (len(first + ".") + len(second))
    assert cues[0].end <= share + 1e-3 <= cues[1].start + 2e-3 and cues[-1].end == pytest.approx(duration, abs=1e-3)


def test_a_bad_captions_value_is_one_line_and_nothing_is_written(tmp_path: Path, ref_wav: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.txt"
    script.write_text("Good evening.", encoding="utf-8")
    out = str(tmp_path / "out.wav")
    for extra, needle in ((["-o", out, "--captions", "srt,ass"], "unknown caption format 'ass'"),
                          (["-o", out, "--captions", ","], "give srt, vtt or srt,vtt"),
                          (["-o", out, "--captions", "srt", "--captions-words"], "word timestamps go in the WebVTT"),
                          (["-o", out, "--captions-cps", "15"], "--captions-cps needs --captions"),
                          (["-o", out, "--captions", "vtt", "--captions-lines", "4"], "lines a caption: 4"),
                          (["-o", out, "--captions-estimate"], "--captions-estimate needs --captions"),
                          (["-o", out, "--captions", "srt", "--asr-model", str(tmp_path / "none")], "ASR model directory"),
                          (["--play", "--captions", "srt"], "--captions writes beside the audio: give -o"),
                          (["-o", str(tmp_path / "s.wav"), "--captions", "srt"], "is the script")):
        target = tmp_path / "s.srt"
        if "is the script" in needle:  # the script itself is where s.wav's captions would go
            script = script.rename(target)
        assert main(render([str(script), *extra], ref_wav)) == 2, extra
        one_line_error(capsys, needle)
        assert sorted(p.name for p in tmp_path.iterdir()) == [script.name], extra


def test_a_failure_after_rendering_leaves_no_file_at_all(tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
                                                         aligned: Aligned, capsys: pytest.CaptureFixture[str]) -> None:
    """The caption files are staged with the audio pair: a caption that cannot be written (a full disk)
    leaves no audio, sidecar or other caption behind, and a failed sentence writes none of them."""
    import errno

    from omnistudio.take import captions

    real = captions.caption_writers

    def full_disk(*args: Any, **kwargs: Any) -> Any:
        pairs = real(*args, **kwargs)

        def fail(_tmp: Path) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        return [*pairs[:-1], (pairs[-1][0], fail)]

    monkeypatch.setattr(captions, "caption_writers", full_disk)
    script = tmp_path / "s.txt"
    script.write_text("Good evening. Here is the news.", encoding="utf-8")
    assert main(render([str(script), "-o", str(tmp_path / "out.wav"), "--captions", "srt,vtt"], ref_wav)) == 2
    one_line_error(capsys, "no space left on the device for", alone=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.txt"]


def test_captions_command_bad_inputs_are_one_line_and_write_nothing(
        renders: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wav = tmp_path / "take.wav"
    shutil.copy(renders["plain"], wav)
    shutil.copy(renders["plain"].with_name("plain.wav.json"), tmp_path / "take.wav.json")
    bare = tmp_path / "bare.wav"
    shutil.copy(renders["plain"], bare)
    not_audio = tmp_path / "notes.wav"
    not_audio.write_text("hello")
    sidecar = json.loads(renders["plain"].with_name("plain.wav.json").read_text())
    for name, change in (("badtimes", {"start_s": -5.0, "end_s": 1e308}), ("broken", None)):
        shutil.copy(renders["plain"], tmp_path / f"{name}.wav")
        if change is None:  # a sidecar that is not JSON is not "no sidecar"
            (tmp_path / f"{name}.wav.json").write_text("{not json", encoding="utf-8")
        else:
            bad = {**sidecar, "sentences": [{**sidecar["sentences"][0], **change}, *sidecar["sentences"][1:]]}
            (tmp_path / f"{name}.wav.json").write_text(json.dumps(bad), encoding="utf-8")
    shutil.copytree(renders["project"], tmp_path / "ppcopy")  # a project copied without its suffix
    before = sorted(p.name for p in tmp_path.iterdir())
    cases = (([str(tmp_path / "missing.wav"), "--text", "Hi."], "no such file"),
             ([str(not_audio), "--text", "Hi."], "is not a readable audio file"),
             ([str(bare)], "has no sidecar (bare.wav.json)"),
             ([str(tmp_path / "badtimes.wav")], "badtimes.wav.json cannot be used (ValueError: sentence 1 is timed"),
             ([str(tmp_path / "broken.wav")], "broken.wav.json cannot be used (not valid JSON)"),
             ([str(tmp_path / "ppcopy")], "holds a project but is not named NAME.omniproj: rename it"),
             ([str(wav), "--text", "One. Two."], "the text has 2 sentences; the sidecar of take.wav times 3"),
             ([str(wav), "--format", "ass"], "unknown caption format 'ass'"),
             ([str(wav), "-o", str(tmp_path / "nowhere")], "output folder"),
             ([str(wav), "-o", str(renders["project"])], "is in the project folder"),
             ([str(wav), "--lang", "fr", "--text", "Hi."], "fr"),
             ([str(renders["project"]), "--text", "Hi."], "are for an audio file"),
             ([str(tmp_path / "empty.omniproj")], "does not exist"),
             ([str(wav), "--asr-model", str(tmp_path / "no-model")], "ASR model directory"))
    for args, needle in cases:
        assert main(["captions", *args]) == 2, args
        one_line_error(capsys, needle)
        assert sorted(p.name for p in tmp_path.iterdir()) == before, args
    assert not [p for p in renders["project"].iterdir() if p.suffix in (".srt", ".vtt")]


def test_captions_are_made_from_spans_and_words_as_the_sidecar_records_them() -> None:
    """Captions made later from a sidecar are those written with the file: the file's own are made from
    the spans and words as the sidecar rounds them (0.1 ms, 1 ms), not from the unrounded ones."""
    from omnistudio.audio.dsp import SentenceSpan
    from omnistudio.take.captions import timed_sentences

    from omnistudio.take.rows import SentenceText

    rows = [SentenceText(7, "Good evening, everyone.", "Good evening, everyone.", "en")]
    (sentence,) = timed_sentences([SentenceSpan(0, 0.123456789, 1.987654321, 7)], rows)
    assert (sentence.index, sentence.start, sentence.end) == (7, 0.1235, 1.9877)
    assert len(sentence.words) == 3 and all(round(w.start, 3) == w.start and round(w.end, 3) == w.end
                                            for w in sentence.words)


def test_a_long_file_without_a_sidecar_is_not_read_whole(tmp_path: Path, aligned: Aligned,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A 10-minute silent WAV captioned from a one-sentence text: before, the whole span was read for the
    speech model (an hour peaked at 2.1 GB); now a span over a minute is estimated and says so."""
    import soundfile as sf

    wav = tmp_path / "long.wav"
    with sf.SoundFile(str(wav), "w", 24_000, 1, "PCM_16") as fh:
        block = np.zeros(24_000 * 60, dtype=np.float32)
        for _ in range(10):
            fh.write(block)
    import omnistudio.take.file_sentences as file_sentences

    reads: list[int] = []
    real = file_sentences._samples
    monkeypatch.setattr(file_sentences, "_samples", lambda *a: reads.append(1) or real(*a))
    assert main(["captions", str(wav), "--text", "Good evening, here is the news.", "--format", "srt"]) == 0
    err = capsys.readouterr().err
    assert "its words are estimated, not heard" in err
    assert reads == [] and aligned.calls == []
    assert wav.with_suffix(".srt").read_text(encoding="utf-8").count("-->") >= 1


def test_a_hand_edited_sidecars_rows_without_ids_are_matched_by_position(tmp_path: Path) -> None:
    """Rows that name no id (a sidecar edited by hand) take their text by position, whatever ids the spans
    carry (an export that began at the script's second sentence numbers them from 1)."""
    import soundfile as sf

    from omnistudio.take.file_sentences import file_sentences

    audio = tmp_path / "cut.wav"
    sf.write(audio, np.zeros(48_000, dtype=np.float32), 24_000)
    sidecar = {"sentences": [{"id": 1, "start_s": 0.0, "end_s": 0.9}, {"id": 2, "start_s": 1.0, "end_s": 1.9}],
               "timings": {"sentences": [{"text": "Hello there.", "lang": "en"}, {"text": "Number 5.", "lang": "en"}]}}
    (tmp_path / "cut.wav.json").write_text(json.dumps(sidecar), encoding="utf-8")
    timed, _notes = file_sentences(audio, None, None)
    assert [(s.index, s.text) for s in timed] == [(1, "Hello there."), (2, "Number 5.")]
