"""`omnistudio analyze FILE [--json]`: every loudness figure, and one clear line for bad files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def _marked_wav(path: Path) -> Path:
    from omnistudio.audio.bwf import Broadcast, Marker
    from omnistudio.audio.writer import write_audio

    tone = (0.1 * np.sin(2 * np.pi * 1000 * np.arange(24_000 * 4) / 24_000)).astype(np.float32)
    write_audio(path, tone, 24_000, Broadcast(description="a take", markers=(Marker(0.5, "Good evening."),
                                                                              Marker(1.0, "Weather", 2.0))))
    return path


def _patch(path: Path, marker: bytes, offset: int, value: int) -> None:
    data = bytearray(path.read_bytes())
    at = data.index(marker) + offset
    data[at:at + 4] = value.to_bytes(4, "little")
    path.write_bytes(bytes(data))


def test_damaged_chunks_are_one_line_never_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    overrun = _marked_wav(tmp_path / "overrun.wav")
    _patch(overrun, b"data", 4, 0xFFFF_FFF0)  # the data chunk claims 4 GB: the cue and LIST bytes read as samples
    code = main(["analyze", str(overrun), "--json"])
    captured = capsys.readouterr()
    if code == 0:  # the bytes after the audio happened to read as small numbers: measured, with the warning
        assert "warning" in captured.err and "data chunk claims 4,294,967,280 bytes" in captured.err
        assert json.loads(captured.out)["true_peak_dbtp"] < 60
    else:
        assert code == 2 and "damaged" in captured.err and "Traceback" not in captured.err
    assert "RuntimeWarning" not in captured.err
    label = _marked_wav(tmp_path / "label.wav")
    _patch(label, b"labl", 4, 0x7FFF_FFFF)
    assert main(["analyze", str(label)]) == 2
    err = capsys.readouterr().err
    assert "LIST/adtl chunk is damaged" in err and len(err.strip().splitlines()) == 1


def test_a_path_that_is_not_a_file_is_named_for_what_it_is(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    import os

    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    for argv, what in ((["analyze", str(tmp_path)], "is a folder"), (["analyze", str(fifo)], "is a FIFO"),
                       (["captions", str(tmp_path), "--text", "Hello."], "is a folder")):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert what in err and "no such file" not in err, (argv, err)


def test_a_file_at_its_loudness_but_over_the_ceiling_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.audio.profiles import RULES

    assert not RULES["ebu"].verdict(-23.0, -0.5).passed and RULES["ebu"].verdict(-23.0, -1.0).passed
    path = write_tone(tmp_path / "click.wav", [(10, -23)])
    data, rate = sf.read(str(path), dtype="float32")
    data[rate * 5:rate * 5 + 4] = 0.99  # one click at 5 s: the loudness stays, the true peak goes over -1 dBTP
    sf.write(str(path), data, rate, subtype="FLOAT")
    assert main(["analyze", str(path), "--json", "--strict"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert abs(report["integrated_lufs"] + 23.0) < 0.5 and report["true_peak_dbtp"] > -1.0
    assert report["loudness_ok"] and not report["true_peak_ok"] and not report["passed"]


def test_a_file_is_measured_in_blocks_with_the_figures_of_the_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """analyze reads a file block by block (flat memory for a ten-hour file); any block size gives the figures,
    curve and per-story rows of the whole file read at once."""
    from omnistudio.audio import loudness

    path = _marked_wav(tmp_path / "long.wav")
    seen: list[int] = []
    real = loudness._checked

    def counted(path: Path, rate: int, blocks: Any) -> Any:
        for block in real(path, rate, blocks):
            seen.append(block.shape[0])
            yield block

    assert main(["analyze", str(path), "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(loudness, "READ_BLOCK_S", 0.37)
    monkeypatch.setattr(loudness, "_checked", counted)
    assert main(["analyze", str(path), "--json"]) == 0
    blocks = json.loads(capsys.readouterr().out)
    assert len(seen) > 10 and max(seen) == int(0.37 * 24_000)  # read a third of a second at a time
    for key in ("integrated_lufs", "loudness_range_lu", "true_peak_dbtp", "momentary_max_lufs", "short_term_max_lufs"):
        assert blocks[key] == pytest.approx(whole[key], abs=1e-3), key
    assert blocks["segments"] == whole["segments"] and len(whole["segments"]) == 2


def test_a_damaged_mp3_tag_is_one_warning_not_the_decoder_s_own_line(tmp_path: Path,
                                                                     capfd: pytest.CaptureFixture[str]) -> None:
    from omnistudio.audio.bwf import Broadcast, Marker
    from omnistudio.audio.writer import write_audio

    path = tmp_path / "chapters.mp3"
    tone = (0.1 * np.sin(2 * np.pi * 440 * np.arange(24_000 * 3) / 24_000)).astype(np.float32)
    write_audio(path, tone, 24_000, Broadcast(title="t", chapters=(Marker(0.0, "A"), Marker(1.0, "B"))))
    data = bytearray(path.read_bytes())
    at = data.index(b"CHAP")
    data[at + 4:at + 8] = bytes([0x7F, 0x7F, 0x7F, 0x7F])  # the chapter frame claims 256 MB
    path.write_bytes(bytes(data))
    assert main(["analyze", str(path)]) == 0
    err = capfd.readouterr().err  # the process's file descriptor 2, where libmpg123 writes
    assert "libmpg123" not in err and "Whoa" not in err
    assert err.count("warning:") == 1 and "ID3v2 frame claims to be larger" in err
