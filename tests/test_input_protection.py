"""An output path that is one of the command's inputs is refused before any work, and the input is untouched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from omnistudio.cli import main
from support.audio import REF_TEXT

TINY = ["--model", "tiny", "--device", "cpu", "--num-step", "2"]


def _refused(capsys: pytest.CaptureFixture[str], rc: int) -> str:
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "destroy an input" in err
    return err


def test_say_refuses_to_overwrite_its_reference(tmp_path: Path, ref_wav: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    ref = tmp_path / "ref.wav"
    ref.write_bytes(ref_wav.read_bytes())
    before = ref.read_bytes()
    rc = main(["say", "Hi there.", "--ref-audio", str(ref), "--ref-text", REF_TEXT, "-o", str(ref), *TINY])
    assert "reference recording" in _refused(capsys, rc)
    assert ref.read_bytes() == before
    # The same file through another name (a symlink, a '..' detour) is the same input.
    link = tmp_path / "link.wav"
    link.symlink_to(ref)
    rc = main(["say", "Hi.", "--ref-audio", str(ref), "--ref-text", REF_TEXT, "-o", str(link), *TINY])
    _refused(capsys, rc)
    os.mkdir(tmp_path / "sub")
    rc = main(["say", "Hi.", "--ref-audio", str(ref), "--ref-text", REF_TEXT,
               "-o", str(tmp_path / "sub" / ".." / "ref.wav"), *TINY])
    _refused(capsys, rc)
    assert ref.read_bytes() == before


@pytest.mark.parametrize(("script_name", "output_name", "role"), [
    ("same.wav", "same.wav", "the script"),             # the output is the script
    ("notes.wav.json", "notes.wav", "the script"),      # the output's sidecar is the script
])
def test_render_refuses_outputs_that_are_its_script(script_name: str, output_name: str, role: str, tmp_path: Path,
                                                     ref_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / script_name
    script.write_text("Good evening.\n", encoding="utf-8")
    before = script.read_bytes()
    rc = main(["render", str(script), "-o", str(tmp_path / output_name), "--ref-audio", str(ref_wav),
               "--ref-text", REF_TEXT, *TINY])
    assert role in _refused(capsys, rc)
    assert script.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [script_name]


def test_render_refuses_to_overwrite_its_reference(tmp_path: Path, ref_wav: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ref = tmp_path / "ref.wav"
    ref.write_bytes(ref_wav.read_bytes())
    script = tmp_path / "s.txt"
    script.write_text("Good evening.\n", encoding="utf-8")
    rc = main(["render", str(script), "-o", str(ref), "--ref-audio", str(ref), "--ref-text", REF_TEXT, *TINY])
    assert "reference recording" in _refused(capsys, rc)
    assert ref.read_bytes() == ref_wav.read_bytes()
