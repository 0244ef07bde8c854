"""`omnistudio render`: a script to a file through the streaming path; every bad input is one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import soundfile as sf

from omnistudio.cli import main
from support.audio import REF_TEXT
from support.cli import one_line_error



def render(args: list[str], ref_wav: Path) -> list[str]:
    return ["render", *args, "--model", "tiny", "--device", "cpu", "--num-step", "2",
            "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT]


def test_render_writes_the_stitched_script(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture[str],
                                          tiny_engine: object) -> None:  # the checkpoint built before (its log)
    script = tmp_path / "s.txt"
    script.write_text("Good evening. Here is the news.\n[:es] Buenas noches, Sr. García.\n", encoding="utf-8")
    out = tmp_path / "out.wav"
    assert main(render([str(script), "-o", str(out), "--json"], ref_wav)) == 0
    captured = capsys.readouterr()
    # stderr is not a terminal here: no progress drawn, and no empty line (Rich's Progress.stop printed one)
    assert all(line.strip() for line in captured.err.splitlines()), captured.err
    assert "warning" not in captured.err  # each line reads in its own language
    result = json.loads(captured.out)
    assert [s["text"] for s in result["sentences"]] == ["Good evening.", "Here is the news.",
                                                         "Buenas noches, Sr. García."]
    assert [s["lang"] for s in result["sentences"]] == ["en", "en", "es"]
    data, sr = sf.read(str(out), dtype="float32")
    assert sr == 24_000
    # Sentences plus the pauses between them (0.15 s inside a line, 0.45 s at a line break), less at
    # most 1.5 ms of zero-crossing trim per sentence edge.
    expected = sum(s["audio_s"] for s in result["sentences"]) + 0.15 + 0.45
    assert len(data) / sr == pytest.approx(expected, abs=3 * 2 * 0.0015)
    assert result["audio_s"] == pytest.approx(len(data) / sr, abs=1e-3)  # what played is what was written
    assert result["loudness"]["integrated_lufs"] == pytest.approx(-23.0, abs=0.5)
    sidecar = json.loads(Path(result["sidecar"]).read_text())
    assert [s["id"] for s in sidecar["sentences"]] == [0, 1, 2]
    assert sidecar["engine"]["dtype"] == result["dtype"] == "fp32"  # the backbone dtype (LinkInfo)
    assert 0 < result["ttfa_s"] <= result["total_s"]
    assert result["played"] is False and result["underruns"] is None
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp files left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.wav", "out.wav.json", "s.txt"]


def test_a_line_that_reads_as_the_other_language_is_one_warning_and_renders(
        tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.txt"  # the untagged line keeps the Spanish of the line before it
    script.write_text("[:es] Buenas noches.\nThe Dow rose 1.2% to 38,450 points, and oil fell to $78.40 a barrel.\n",
                      encoding="utf-8")
    out = tmp_path / "out.wav"
    assert main(render([str(script), "-o", str(out), "--json"], ref_wav)) == 0
    warning = one_line_error(capsys, "", alone=False)
    assert warning == ("omnistudio: warning: line 2 reads as English but is read in Spanish (tag it [:en])")
    assert out.exists()


def test_failed_sentence_writes_nothing(tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.engine.engine import Engine

    real = Engine.render_tokens

    def flaky(self: Any, texts: list[str], *a: Any, **k: Any) -> Any:
        if "Bad one." in texts:
            raise RuntimeError("kaboom")
        return real(self, texts, *a, **k)

    monkeypatch.setattr(Engine, "render_tokens", flaky)
    script = tmp_path / "s.txt"
    script.write_text("Fine one. Bad one. Fine two.")
    out = tmp_path / "out.wav"
    assert main(render([str(script), "-o", str(out)], ref_wav)) == 2
    err = capsys.readouterr().err
    assert 'sentence 2 (line 1, "Bad one."): RuntimeError: kaboom' in err
    assert "stopped at the first failed sentence, nothing written" in err
    assert list(tmp_path.iterdir()) == [script]


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


BAD_SCRIPTS = [
    ("empty", "", "the script is empty"),
    ("only-tags", "[ruby]\n[valentina:es]\n", "only speaker tags"),
    ("unknown-speaker", "Hello.\n[nobody_here] Hi.", "line 2: unknown speaker 'nobody_here'"),
    ("unknown-tag-language", "[:fr] Bonjour.", "line 1: unknown language 'fr'"),
    ("binary", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50, "looks like a binary file"),
    ("non-utf8", "Hola.\nEl niño.".encode("latin-1"), "not UTF-8 text"),
    ("one-megabyte", "This is a sentence. " * 52_429, "is 1,048,580 bytes; the limit is 65,536"),
]


@pytest.mark.parametrize(("name", "content", "message"), BAD_SCRIPTS, ids=[b[0] for b in BAD_SCRIPTS])
def test_bad_scripts_are_one_clear_error(name: str, content: str | bytes, message: str, tmp_path: Path,
                                         ref_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _write(tmp_path / f"{name}.txt", content)
    out = tmp_path / "out.wav"
    assert main(render([str(script), "-o", str(out)], ref_wav)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("omnistudio: error: ") and message in err
    assert len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == [script]  # nothing written, not even a temp file


@pytest.mark.parametrize(("extra", "message"), [
    (["-o", "{tmp}/out.wav", "--lang", "xx"], "unknown language 'xx'"),
    (["-o", "{tmp}/missing-dir/out.wav"], "does not exist"),
    (["-o", "{tmp}/script.txt/out.wav"], "does not exist"),
    (["-o", "{tmp}"], "unknown output extension"),
    (["-o", "{tmp}/out.ogg"], "unknown output extension"),
    ([], "nothing to do"),
    (["-o", "{tmp}/out.wav", "--voice", "ruby"], "either --voice or --ref-audio"),
])
def test_bad_options_are_one_clear_error(extra: list[str], message: str, tmp_path: Path, ref_wav: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    script = _write(tmp_path / "script.txt", "Hello there.")
    args = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    assert main(render([str(script), *args], ref_wav)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == [script]


def test_missing_script_and_missing_voice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", str(tmp_path / "none.txt"), "-o", str(tmp_path / "o.wav"), "--model", "tiny"]) == 2
    assert "does not exist" in capsys.readouterr().err
    script = _write(tmp_path / "s.txt", "No tag here.")
    assert main(["render", str(script), "-o", str(tmp_path / "o.wav"), "--model", "tiny"]) == 2
    assert "line 1 has no speaker tag: give --voice ANCHOR" in capsys.readouterr().err


def test_play_without_a_device_still_writes_the_file(tmp_path: Path, ref_wav: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    script = _write(tmp_path / "s.txt", "Hello there.")
    out = tmp_path / "out.wav"
    rc = main(render([str(script), "-o", str(out), "--play", "--audio-device", "no-such-device-xyz"], ref_wav))
    assert rc == 0
    err = capsys.readouterr().err
    assert "warning: no audio output device" in err and out.exists()
    assert main(render([str(script), "--play", "--audio-device", "no-such-device-xyz"], ref_wav)) == 2
    assert "error: no audio output device" in capsys.readouterr().err


def test_sidecar_json_and_project_takes_record_what_the_audio_depends_on(
        tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The reproducibility contract: model, device, dtype, quantisation, compilation, torch threads, seed, text,
    voice and options, in the sidecar, the --json line and every project take."""
    import torch

    torch.set_num_threads(2)  # not the suite's one thread: the record must name the count rendered with
    script = tmp_path / "s.txt"
    script.write_text("Good evening.\n[:es] Buenas noches.\n", encoding="utf-8")
    out = tmp_path / "out.wav"
    assert main(render([str(script), "-o", str(out), "--json", "--seed", "7"], ref_wav)) == 0
    said = json.loads(capsys.readouterr().out)
    sidecar = json.loads(Path(said["sidecar"]).read_text())
    engine = {"model": "tiny", "device": "cpu", "dtype": "fp32", "sampler": "fast", "threads": 2,
              "quantisation": "none", "compile": "off", "path": "auto: CPU without native bf16"}  # path: how chosen
    assert sidecar["engine"] == engine and {k: said[k] for k in engine} == engine
    take = {"seed": 7, "num_step": 2, "guidance": 2.0, "speed": 1.0, "batch": 1, "lang": "en"}
    assert {k: sidecar["take"][k] for k in take} == take and {k: said[k] for k in take} == take
    voice = sidecar["take"]["voice"]
    assert voice.startswith("rec:") and said["voice"] == voice
    rows = sidecar["timings"]["sentences"]
    assert [(r["text"], r["voice"], r["lang"]) for r in rows] == [("Good evening.", voice, "en"),
                                                                  ("Buenas noches.", voice, "es")]
    assert len({r["seed"] for r in rows}) == 2 and rows == said["sentences"]

    project = tmp_path / "p.omniproj"
    assert main(render([str(script), "-o", str(tmp_path / "p.wav"), "--project", str(project), "--json"],
                       ref_wav)) == 0
    said = json.loads(capsys.readouterr().out)
    stored = [t for line in json.loads((project / "project.json").read_text())["sentences"] for t in line["takes"]]
    assert len(stored) == 2 and all(t["engine"] == engine and t["speed"] == 1.0 for t in stored)
    assert all(t["engine"] == engine for s in said["takes"] for t in s["takes"])
