"""`omnistudio say` end to end, and every bad input: one line, non-zero exit, no output file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omnistudio.cli import main
from support.audio import REF_TEXT, make_reference
from support.cli import one_line_error
from support.wait import HANG_S


def say(args: list[str]) -> int:
    return main(["say", "--model", "tiny", "--device", "cpu", *args])


def test_say_writes_a_wav_and_json(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out.wav"
    rc = say(["--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "Good evening and welcome.",
              "-o", str(out), "--json", "--sampler", "stock"])
    assert rc == 0
    data, sr = sf.read(str(out), dtype="float32")
    assert sr == 24_000 and data.ndim == 1 and len(data) > 24_000
    assert np.all(np.isfinite(data))
    payload = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert payload["output"] == str(out)
    assert payload["audio_s"] == pytest.approx(len(data) / 24_000)
    assert payload["rtf"] > 0 and payload["wall_s"] > 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


def test_say_same_seed_bit_identical_files(tmp_path: Path, ref_wav: Path) -> None:
    outs = []
    for i, seed in enumerate(["5", "5", "6"]):
        out = tmp_path / f"o{i}.wav"
        assert say(["--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "Breaking news tonight.",
                    "-o", str(out), "--seed", seed]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert outs[0] != outs[2]


def _bad_refs(tmp: Path) -> dict[str, Path]:
    refs = {"missing": tmp / "nope.wav"}
    (tmp / "empty.wav").write_bytes(b"")
    refs["empty"] = tmp / "empty.wav"
    (tmp / "text.wav").write_text("this is not audio at all\n" * 20)
    refs["non-audio"] = tmp / "text.wav"
    sf.write(str(tmp / "zero.wav"), np.zeros(0, dtype=np.float32), 24_000)
    refs["zero-length"] = tmp / "zero.wav"
    nan = np.full(24_000 * 2, np.nan, dtype=np.float32)
    sf.write(str(tmp / "nan.wav"), nan, 24_000, subtype="FLOAT")
    refs["nan"] = tmp / "nan.wav"
    hour = tmp / "hour.wav"
    with sf.SoundFile(str(hour), "w", samplerate=8_000, channels=1, subtype="PCM_16") as fh:
        block = (np.sin(np.arange(8_000 * 60) / 10) * 0.1).astype(np.float32)
        for _ in range(60):
            fh.write(block)
    refs["1-hour"] = hour
    sf.write(str(tmp / "silent.wav"), np.zeros(24_000 * 2, dtype=np.float32), 24_000)
    refs["silent"] = tmp / "silent.wav"
    return refs


def _assert_one_line_error(capsys: pytest.CaptureFixture, rc: int, out: Path) -> str:
    assert rc == 2
    err = one_line_error(capsys, "omnistudio: error:")
    assert not out.exists()
    return err


BAD_REF_MESSAGES = {"missing": "does not exist", "empty": "is empty (0 bytes)", "non-audio": "is not a readable audio file",
                    "zero-length": "has no samples", "nan": "contains NaN or infinite samples",
                    "1-hour": "is 3600.0 s long; the limit is 30 s", "silent": "is silent"}


@pytest.mark.parametrize("kind", list(BAD_REF_MESSAGES))
def test_bad_reference_files(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ref = _bad_refs(tmp_path)[kind]
    out = tmp_path / "out.wav"
    rc = say(["--ref-audio", str(ref), "--ref-text", "Hello there.", "Hi.", "-o", str(out)])
    err = _assert_one_line_error(capsys, rc, out)
    assert f"reference audio {ref} {BAD_REF_MESSAGES[kind]}" in err, err  # names the file and what is wrong


@pytest.mark.parametrize(
    "args, needle",
    [
        (["   "], "empty"),
        ([""], "empty"),
        (["Hello.", "--lang", "klingon"], "language"),
        (["Hello.", "--num-step", "0"], "num_step"),
        (["Hello.", "--num-step", "1000"], "num_step"),
        ([os.fsdecode(b"caf\xe9 12")], "is not valid UTF-8: byte 0xE9 at character 4"),  # a Latin-1 argument
        (["Hello.", "--server", "http://127.0.0.1:9", "--api-key-file", "/dev/zero"], "is not a regular file"),
    ],
)
def test_bad_arguments(args: list[str], needle: str, tmp_path: Path, ref_wav: Path,
                       capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out.wav"
    rc = say(["--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, *args, "-o", str(out)])
    assert needle in _assert_one_line_error(capsys, rc, out)


def test_reference_without_transcript(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out.wav"
    rc = say(["--ref-audio", str(ref_wav), "Hello.", "-o", str(out)])
    assert "transcript" in _assert_one_line_error(capsys, rc, out)


def test_unwritable_output(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture) -> None:
    # /proc refuses new files even to root; chmod alone would not stop root (CI runs as root).
    cases = {Path("/proc/omnistudio-out.wav"): "output folder /proc is not writable",
             tmp_path / "no-such-dir" / "out.wav": f"output folder {tmp_path / 'no-such-dir'} does not exist",
             tmp_path / "out.ogg": f"unknown output extension '.ogg' for {tmp_path / 'out.ogg'}",
             tmp_path: f"unknown output extension '(none)' for {tmp_path}"}
    for out, message in cases.items():
        rc = say(["--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "Hello.", "-o", str(out)])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and err.startswith("omnistudio: error:") and "\n" not in err, err
        assert message in err, err
    assert not (tmp_path / "out.ogg").exists()


def test_model_directory_missing_files(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    out = tmp_path / "out.wav"
    rc = main(["say", "--model", str(model_dir), "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT,
               "Hello.", "-o", str(out)])
    assert "missing" in _assert_one_line_error(capsys, rc, out)


def test_subprocess_bad_input_has_no_traceback(tmp_path: Path) -> None:
    """As a user runs it: a fresh interpreter, exit status and stderr only."""
    ref = make_reference(tmp_path / "r.wav")
    out = tmp_path / "out.wav"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-m", "omnistudio.cli", "say", "--model", "tiny",
                           "--ref-audio", str(ref), "--ref-text", "Hi.", "--lang", "xx", "Hello.",
                           "-o", str(out)], capture_output=True, text=True, env=env, timeout=HANG_S)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "omnistudio: error: unknown language 'xx': use one of en, es"
    assert not out.exists()


def test_unknown_anchor_and_both_voices(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out.wav"
    rc = say(["--voice", "nobody-here", "Hello.", "-o", str(out)])
    assert "unknown anchor 'nobody-here'" in _assert_one_line_error(capsys, rc, out)
    rc = say(["--voice", "ruby", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "Hello.", "-o", str(out)])
    assert "not both" in _assert_one_line_error(capsys, rc, out)
