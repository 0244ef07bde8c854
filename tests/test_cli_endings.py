"""How the `omnistudio` process ends when the world around it fails: a reader that closed the pipe, too
little memory to load torch, a script over the size limit, and no stray library warnings on stderr."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from support.audio import REF_TEXT

CLI = [sys.executable, "-m", "omnistudio.cli"]


def _ours(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("omnistudio:")]


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["table", "json"])
def test_a_closed_stdout_ends_quietly(omnistudio_home: Path, extra: list[str]) -> None:
    """`omnistudio voices list | head -1`: once the reader is gone the command stops, exit 0, no line
    (as `ls | head` does). The read end is closed before the command writes, so the pipe always breaks."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([*CLI, "voices", "list", *extra], stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=600)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr


@pytest.mark.parametrize("limit_kb", [400_000, 2_000_000])
def test_too_little_memory_to_load_is_one_line(omnistudio_home: Path, ref_wav: Path, tmp_path: Path,
                                               limit_kb: int) -> None:
    """`ulimit -v`: Python's own imports fail (MemoryError, 400 MB) or the loader cannot map torch's
    libraries (ImportError "failed to map segment", 2 GB): either way one line about memory."""
    command = shlex.join([*CLI, "say", "Hello.", "-o", str(tmp_path / "x.wav"), "--model", "tiny", "--device", "cpu",
                          "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT])
    done = subprocess.run(["bash", "-c", f"ulimit -v {limit_kb} && exec {command}"], capture_output=True, text=True,
                          timeout=600)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert done.returncode == 2 and len(_ours(done.stderr)) == 1, done.stderr
    assert "out of memory" in _ours(done.stderr)[0]
    assert not (tmp_path / "x.wav").exists()


def test_a_script_over_the_limit_is_said_in_bytes(omnistudio_home: Path, tmp_path: Path) -> None:
    script = tmp_path / "long.txt"
    script.write_text("a" * 65_537)
    done = subprocess.run([*CLI, "render", str(script), "-o", str(tmp_path / "o.wav"), "--model", "tiny"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and done.stderr.strip() == (
        f"omnistudio: error: script {script} is 65,537 bytes; the limit is 65,536 (64 KB, about an hour of speech): "
        "split it into parts")


def test_loading_a_model_prints_no_ffmpeg_warning(tmp_path: Path, ref_wav: Path) -> None:
    """pydub warns at import when ffmpeg is missing; OmniStudio never needs it. A fresh home, so the tiny
    checkpoint is built first (the other import of omnivoice)."""
    env = {**os.environ, "OMNISTUDIO_HOME": str(tmp_path / "home")}
    for _ in range(2):  # building the checkpoint, then loading the one built
        done = subprocess.run([*CLI, "say", "Hello.", "-o", str(tmp_path / "x.wav"), "--model", "tiny", "--device",
                               "cpu", "--num-step", "2", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT],
                              capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stderr
        assert "ffmpeg" not in done.stderr and "RuntimeWarning" not in done.stderr, done.stderr
