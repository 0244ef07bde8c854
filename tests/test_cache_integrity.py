"""Damaged caches are moved aside and rebuilt with one warning naming the file; temp files and
build folders of killed runs are removed at the next start."""

from __future__ import annotations

import filecmp

import logging
import os
import re
import shutil
from pathlib import Path

import pytest

from omnistudio.cli import main
from support.audio import REF_TEXT

DEAD_PID = 4_000_000  # above any pid a test machine hands out (pid_max is 4194304 at most)


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _warnings(err: str, needle: str) -> list[str]:
    """The WARNING records in stderr that mention ``needle`` (Rich wraps a record over lines)."""
    records = re.split(r"^WARNING\s+", err, flags=re.MULTILINE)[1:]
    return [" ".join(r.split()) for r in records if needle in " ".join(r.split())]


def test_truncated_checkpoint_is_rebuilt_with_one_warning(tmp_path: Path, ref_wav: Path, omnistudio_home: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.engine.checkpoints import checkpoint_dir, ensure_checkpoint

    built = ensure_checkpoint("tiny")  # the session's tiny checkpoint, copied: no rebuild from scratch needed here
    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path / "home"))
    shutil.copytree(built, checkpoint_dir("tiny"))
    weights = checkpoint_dir("tiny") / "model.safetensors"
    with open(weights, "r+b") as fh:
        fh.truncate(weights.stat().st_size // 2)
    say = ["say", "Hello there.", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "--model", "tiny",
           "--device", "cpu", "--num-step", "2"]
    assert main([*say, "-o", str(tmp_path / "a.wav")]) == 0
    damaged = _warnings(capsys.readouterr().err, "damaged")
    assert len(damaged) == 1 and str(weights) in damaged[0].replace(" ", "")  # Rich may break the path
    aside = [p.name for p in checkpoint_dir("tiny").parent.iterdir() if p.name.startswith("tiny-v1.damaged-")]
    assert len(aside) == 1
    assert main([*say, "-o", str(tmp_path / "b.wav")]) == 0  # rebuilt: loads with no warning about it
    assert not _warnings(capsys.readouterr().err, "damaged")
    assert filecmp.cmp((tmp_path / "a.wav"), (tmp_path / "b.wav"), shallow=False)


@pytest.mark.parametrize("damage", ["garbage", "directory"])
def test_damaged_prompt_is_moved_aside_and_rebuilt(damage: str, tiny_engine, tmp_path: Path,  # noqa: ANN001
                                                   ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    from omnistudio.voices.prompts import ensure_prompt, prompt_path
    from omnistudio.voices.roster import ROSTER_ENV, load_roster

    roster_file = tmp_path / "anchors.toml"
    roster_file.write_text(f'format = 1\n[calibration]\nen = "Hello."\nes = "Hola."\n[[anchor]]\nid = "eve"\n'
                           f'name = "Eve"\ngender = "female"\nage = "young adult"\npitch = "high pitch"\nseed = 1\n'
                           f'en = {{ recording = "{ref_wav}", transcript = "{REF_TEXT}" }}\n')
    monkeypatch.setenv(ROSTER_ENV, str(roster_file))
    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path / "home"))
    path = prompt_path("eve", "en")
    path.parent.mkdir(parents=True)
    if damage == "garbage":
        path.write_bytes(b"\x00garbage")
    else:
        (path / "inside").mkdir(parents=True)
    with caplog.at_level(logging.WARNING):
        _prompt, action, _ = ensure_prompt(tiny_engine, load_roster(), "eve", "en")
    assert action == "rebuilt"
    warnings = [r.getMessage() for r in caplog.records if path.name in r.getMessage()]
    assert len(warnings) == 1 and "moved aside" in warnings[0]
    aside = [p for p in path.parent.iterdir() if p.name.startswith(path.name + ".damaged-")]
    assert len(aside) == 1 and (aside[0].read_bytes() == b"\x00garbage" if damage == "garbage"
                                else (aside[0] / "inside").is_dir())
    assert path.is_file()


def test_leftovers_of_killed_runs_are_swept(tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omnistudio.audio.shm import write_shm
    from omnistudio.engine.checkpoints import checkpoint_dir, ensure_checkpoint

    import numpy as np

    assert _dead(DEAD_PID)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    stale = out_dir / f".news.wav.omni-{DEAD_PID}-x1y2.wav"
    live = out_dir / f".news.wav.omni-{os.getppid()}-x1y2.wav"  # a running process's temp stays
    stale.write_bytes(b"half")
    live.write_bytes(b"busy")
    builds = checkpoint_dir("tiny").parent
    build = builds / f".tiny-omni-{DEAD_PID}-abcd"
    build.mkdir(parents=True, exist_ok=True)
    (build / "config.json").write_text("{}")
    shm = tmp_path / "shm"
    shm.mkdir()
    shm_stale = shm / f".take.omni-{DEAD_PID}-zz.tmp"
    shm_stale.write_bytes(b"x")

    assert main(["say", "Hi.", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "--model", "tiny", "--device",
                 "cpu", "--num-step", "2", "-o", str(out_dir / "news.wav")]) == 0
    assert not stale.exists() and live.exists()
    ensure_checkpoint("tiny")
    assert not build.exists()
    write_shm("take", np.zeros(10, dtype=np.float32), 24_000, shm)
    assert not shm_stale.exists() and (shm / "take").is_file()
