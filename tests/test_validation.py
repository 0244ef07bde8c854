"""Nonsense is refused with one line before any work: guidance, a reference too quiet to be a voice,
unclosed tags, lines with nothing to speak; analyze reports silence as -inf and refuses NaN samples."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omnistudio.cli import main
from omnistudio.errors import UserError
from omnistudio.script import parse_script
from support.audio import REF_TEXT
from support.cli import one_line_error

TINY = ["--model", "tiny", "--device", "cpu", "--num-step", "2"]


def _one_line(capsys: pytest.CaptureFixture[str], rc: int, needle: str) -> None:
    assert rc == 2
    one_line_error(capsys, needle, alone=False)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "20.5"])
@pytest.mark.parametrize("command", ["say", "render"])
def test_guidance_must_be_finite_0_to_20(value: str, command: str, tmp_path: Path, ref_wav: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.txt"
    script.write_text("Hello.\n")
    first = ["say", "Hello."] if command == "say" else ["render", str(script)]
    out = tmp_path / "o.wav"
    rc = main([*first, "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "-o", str(out), *TINY,
               f"--guidance={value}"])
    _one_line(capsys, rc, "guidance")
    assert not out.exists()


@pytest.mark.parametrize("command", ["say", "render"])
def test_reference_below_the_loudness_floor(command: str, tmp_path: Path, ref_wav: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    data, sr = sf.read(str(ref_wav), dtype="float32")
    quiet = tmp_path / "quiet.wav"
    sf.write(str(quiet), data / np.sqrt(np.mean(data ** 2)) * 10 ** (-90 / 20), sr)  # -90 dBFS RMS
    script = tmp_path / "s.txt"
    script.write_text("Hello.\n")
    first = ["say", "Hello."] if command == "say" else ["render", str(script)]
    rc = main([*first, "--ref-audio", str(quiet), "--ref-text", REF_TEXT, "-o", str(tmp_path / "o.wav"), *TINY])
    _one_line(capsys, rc, "is too quiet (-")
    assert not (tmp_path / "o.wav").exists()


@pytest.mark.parametrize(("text", "needle"), [
    ("[ruby Hello there.", "line 1: unclosed tag '[ruby Hello there.'"),
    ("Fine.\n  [valentina:es Hola.", "line 2: unclosed tag"),
    ("Good evening.\n...\n", "line 2: nothing to speak in '...'"),
    ("[ruby] !!! ?!", "line 1: nothing to speak"),
    ("— — —", "nothing to speak"),
])
def test_scripts_with_unclosed_tags_or_nothing_to_speak(text: str, needle: str) -> None:
    with pytest.raises(UserError, match=needle.replace("[", r"\[").replace("?", r"\?").replace(".", r"\.")):
        parse_script(text, speakers={"ruby", "valentina"})


def test_nonverbal_tags_and_numbers_are_still_speakable() -> None:
    script = parse_script("[laughter] That was fun.\n42.\n[sigh]\n")
    assert [s.text for s in script.sentences] == ["[laughter] That was fun.", "42.", "[sigh]"]


def test_analyze_silence_is_minus_inf_with_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "silence.wav"
    sf.write(str(path), np.zeros(24_000 * 5, dtype=np.float32), 24_000)
    assert main(["analyze", str(path)]) == 0
    out = capsys.readouterr().out
    assert "-3000" not in out
    assert re.search(r"Short-term max \(3 s\)\s+-inf LUFS", out) and "note: silent" in out
    assert main(["analyze", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["short_term_max_lufs"] is None and report["integrated_lufs"] is None
    assert report["note"].startswith("silent")


def test_analyze_refuses_nan_and_inf_samples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = 0.1 * np.sin(np.arange(24_000) / 5.0).astype(np.float32)
    data[12_000] = np.nan
    data[12_001] = np.inf
    path = tmp_path / "bad.wav"
    sf.write(str(path), data, 24_000, subtype="FLOAT")
    rc = main(["analyze", str(path)])
    _one_line(capsys, rc, "2 NaN or infinite samples (the first at 0.500 s)")
