"""A render stops at the first failed sentence: one line naming it, nothing more rendered, nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from omnistudio.cli import main
from support.audio import REF_TEXT



def _flaky(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    from omnistudio.engine.engine import Engine

    real, calls = Engine.render_tokens, []

    def flaky(self: Any, texts: list[str], *a: Any, **k: Any) -> Any:
        calls.append(list(texts))
        if "Bad one." in texts:
            raise MemoryError("out of memory")
        return real(self, texts, *a, **k)

    monkeypatch.setattr(Engine, "render_tokens", flaky)
    return calls


def _args(tmp_path: Path, ref_wav: Path, *extra: str) -> list[str]:
    script = tmp_path / "s.txt"
    script.write_text("Fine one. Bad one.\n" + "\n".join(f"Line number {i}." for i in range(12)) + "\n")
    return ["render", str(script), "-o", str(tmp_path / "out.wav"), "--model", "tiny", "--device", "cpu",
            "--num-step", "2", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, *extra]


def test_render_stops_at_the_first_failed_sentence(tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    calls = _flaky(monkeypatch)
    out = tmp_path / "out.wav"
    out.write_bytes(b"previous take")
    assert main(_args(tmp_path, ref_wav)) == 2
    full = capsys.readouterr().err
    err = "\n".join(line for line in full.splitlines() if "omnistudio:" in line)
    assert len(err.splitlines()) == 1 and "Traceback" not in full
    assert 'sentence 2 (line 1, "Bad one.")' in err and "stopped at the first failed sentence" in err
    assert len(calls) <= 3, f"{len(calls)} sentences rendered after a failure"  # at most the one rendering ahead
    assert out.read_bytes() == b"previous take"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.wav", "s.txt"]


def test_skip_failed_leaves_the_sentence_out_says_so_and_lists_it(
        tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import soundfile as sf

    calls = _flaky(monkeypatch)
    out = tmp_path / "out.wav"
    assert main(_args(tmp_path, ref_wav, "--skip-failed")) == 0
    err = capsys.readouterr().err
    skipped = [line for line in err.splitlines() if "skipped sentence" in line]
    assert len(skipped) == 1 and "skipped sentence 2 (line 1)" in skipped[0] and "Traceback" not in err
    assert len(calls) == 14  # every other sentence still rendered
    sidecar = json.loads(out.with_name("out.wav.json").read_text())
    assert sidecar["timings"]["skipped"] == [2]
    assert sf.info(str(out)).frames > 0
