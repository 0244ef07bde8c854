"""`omnistudio analyze FILE [--json]`: every loudness figure, and one clear line for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omnistudio.cli import main


@pytest.fixture()
def tone_wav(tmp_path: Path) -> Path:
    sr = 48_000
    t = np.arange(10 * sr) / sr
    path = tmp_path / "tone.flac"
    sf.write(str(path), (10 ** (-23 / 20) * np.sin(2 * np.pi * 1000 * t)).astype(np.float32), sr)
    return path


def test_json_has_every_figure(tone_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(tone_wav), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["integrated_lufs"] == pytest.approx(-23.0, abs=0.1)
    assert data["channel_mode"] == "dual-mono"
    assert data["true_peak_dbtp"] == pytest.approx(-23.0, abs=0.2)
    assert data["crest_factor_db"] == pytest.approx(3.01, abs=0.05)
    for key in ("loudness_range_lu", "momentary_max_lufs", "short_term_max_lufs", "sample_peak_dbfs"):
        assert isinstance(data[key], float)


def test_mono_as_mono_and_text_output(tone_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(tone_wav), "--mono-as", "mono"]) == 0
    out = capsys.readouterr().out
    assert "measured as mono" in out
    line = next(x for x in out.splitlines() if "Integrated" in x)
    assert float(line.split()[-2]) == pytest.approx(-26.0, abs=0.1)


@pytest.mark.parametrize("content,message", [(b"", "is empty"), (b"hello, not audio" * 50, "not a readable audio file"),
                                             (None, "no such file")])
def test_bad_files_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None,
                                  message: str) -> None:
    path = tmp_path / "in.wav"
    if content is not None:
        path.write_bytes(content)
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("omnistudio: error:") and message in err and "\n" not in err


def test_zero_frame_wav(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "none.wav"
    sf.write(str(path), np.zeros(0, dtype=np.float32), 24_000)
    assert main(["analyze", str(path)]) == 2
    assert "holds no audio frames" in capsys.readouterr().err
