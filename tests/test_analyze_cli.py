"""`omnistudio analyze FILE [--json]`: every loudness figure, and one clear line for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omnistudio.cli import main


SR = 48_000


def write_tone(path: Path, levels: list[tuple[float, float]]) -> Path:
    """A 1 kHz sine in segments of (seconds, peak dBFS). Measured dual-mono, a 1 kHz sine's loudness in
    LUFS is its peak level in dBFS (BS.1770's calibration), its RMS 3.01 dB under its peak."""
    parts = [10 ** (db / 20) * np.sin(2 * np.pi * 1000 * np.arange(int(secs * SR)) / SR) for secs, db in levels]
    sf.write(str(path), np.concatenate(parts).astype(np.float32), SR)
    return path


def power_db(levels: list[tuple[float, float]]) -> float:
    """The mean power of those segments in dB (their integrated loudness when no block is gated out)."""
    total = sum(secs for secs, _ in levels)
    return 10 * np.log10(sum(secs * 10 ** (db / 10) for secs, db in levels) / total)


@pytest.fixture()
def tone_wav(tmp_path: Path) -> Path:
    return write_tone(tmp_path / "tone.flac", [(10, -23)])


def analyze(path: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["analyze", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_has_every_figure(tone_wav: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each figure is the one its name says, on signals where they differ from one another."""
    data = analyze(tone_wav, capsys)  # steady: every loudness figure is the same, no range
    assert data["integrated_lufs"] == pytest.approx(-23.0, abs=0.1)
    assert data["channel_mode"] == "dual-mono" and data["channels"] == 1 and data["sample_rate"] == SR
    assert data["true_peak_dbtp"] == pytest.approx(-23.0, abs=0.2)
    assert data["sample_peak_dbfs"] == pytest.approx(-23.0, abs=0.01)
    assert data["crest_factor_db"] == pytest.approx(3.01, abs=0.05)
    assert data["rms_dbfs"] == pytest.approx(-26.01, abs=0.05) and data["duration_s"] == pytest.approx(10.0)
    assert data["momentary_max_lufs"] == pytest.approx(-23.0, abs=0.1)
    assert data["short_term_max_lufs"] == pytest.approx(-23.0, abs=0.1)
    assert data["loudness_range_lu"] == pytest.approx(0.0, abs=0.1)

    # A 1 s burst 10 dB up: the 400 ms momentary window sees all of it, the 3 s short-term window a third.
    burst = [(4, -23), (1, -13), (4, -23)]
    data = analyze(write_tone(tmp_path / "burst.flac", burst), capsys)
    assert data["momentary_max_lufs"] == pytest.approx(-13.0, abs=0.1)
    assert data["short_term_max_lufs"] == pytest.approx(power_db([(1, -13), (2, -23)]), abs=0.1)  # -17.0
    assert data["integrated_lufs"] == pytest.approx(power_db(burst), abs=0.1)
    assert data["sample_peak_dbfs"] == pytest.approx(-13.0, abs=0.01) and data["duration_s"] == pytest.approx(9.0)
    assert data["crest_factor_db"] == pytest.approx(-13.0 - power_db(burst) + 3.01, abs=0.05)

    # 10 s at -23 then 10 s at -33: the loudness range (10th to 95th percentile of short-term) is the step.
    step = [(10, -23), (10, -33)]
    data = analyze(write_tone(tmp_path / "step.flac", step), capsys)
    assert data["loudness_range_lu"] == pytest.approx(10.0, abs=0.2)
    assert data["integrated_lufs"] == pytest.approx(power_db(step), abs=0.1)  # -25.6
    assert data["momentary_max_lufs"] == pytest.approx(-23.0, abs=0.1)


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


def test_a_report_linked_to_the_file_analysed_is_refused(tone_wav: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    before = tone_wav.read_bytes()
    link = tmp_path / "r.html"
    link.symlink_to(tone_wav)
    assert main(["analyze", str(tone_wav), "--report", str(link)]) == 2
    assert "destroy an input" in capsys.readouterr().err and tone_wav.read_bytes() == before


def test_text_a_file_holds_is_shown_with_its_control_characters_escaped(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.audio.bwf import Broadcast, Marker
    from omnistudio.audio.writer import write_audio

    hostile = "\x1b]0;PWNED\x07\x1b[2J\r\nfake line: EBU R128: PASS"
    path = tmp_path / "hostile.wav"
    tone = (0.1 * np.sin(2 * np.pi * 1000 * np.arange(24_000 * 4) / 24_000)).astype(np.float32)
    write_audio(path, tone, 24_000, Broadcast(description=hostile, originator="\x1b[31mred",
                                              markers=(Marker(0.5, hostile),), note=hostile))
    assert main(["analyze", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    assert "\\x1b]0;PWNED\\x07\\x1b[2J\\x0d\\x0afake line" in out
    assert not any(line.startswith("fake line") for line in out.splitlines())
    assert main(["analyze", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "\x1b" not in json.dumps(data, ensure_ascii=False) and "\x1b" not in data["broadcast"]["markers"][0]["label"]
