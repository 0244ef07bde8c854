"""Operating-system failures are one line naming the path (never "internal error"), and a failed
write leaves the previous output pair byte-identical."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import soundfile as sf

from omnistudio.cli import main
from support.audio import REF_TEXT
from support.cli import one_line_error

TINY = ["--model", "tiny", "--device", "cpu", "--num-step", "2"]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB tmpfs (the tests run as root in CI); skipped where mounting is not allowed."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True, check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(folder: Path, leave_pages: int) -> None:
    """Fill ``folder``'s file system so that only ``leave_pages`` 4 KiB pages stay free."""
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize // 4096
    (folder / "filler").write_bytes(b"\0" * max(0, free - leave_pages) * 4096)


def _pages(nbytes: int) -> int:
    return -(-nbytes // 4096)


def test_a_disk_too_small_for_the_sidecar_leaves_the_previous_pair(tmpfs: Path, ref_wav: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    script = tmpfs.parent / "s.txt"
    script.write_text("Good evening. Here is the news.\n", encoding="utf-8")
    out = tmpfs / "news.wav"
    render = ["render", str(script), "-o", str(out), "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, *TINY]
    assert main([*render, "--seed", "1"]) == 0
    before = {p.name: p.read_bytes() for p in tmpfs.iterdir()}
    assert sorted(before) == ["news.wav", "news.wav.json"]
    # Room for the spooled speech (float32 samples) and the new WAV (the same length: same text, the same
    # broadcast chunks), not for the sidecar.
    wav = len(before["news.wav"])
    _fill(tmpfs, _pages(sf.info(str(out)).frames * 4) + _pages(wav))
    capsys.readouterr()
    assert main([*render, "--seed", "2"]) == 2
    line = one_line_error(capsys, alone=False)
    assert "no space left" in line and str(tmpfs) in line
    (tmpfs / "filler").unlink()
    assert {p.name: p.read_bytes() for p in tmpfs.iterdir()} == before  # the old pair, and no temp files


def test_flac_on_a_full_disk_says_no_space(tmpfs: Path, ref_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _fill(tmpfs, 1)
    rc = main(["say", "Good evening and welcome to the news.", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT,
               "-o", str(tmpfs / "x.flac"), *TINY])
    assert rc == 2 and "no space left" in one_line_error(capsys, alone=False)
    assert sorted(p.name for p in tmpfs.iterdir()) == ["filler"]


def test_read_only_home(tmpfs: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmpfs / "home"))
    rc = main(["voices", "add", "Ro Test", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "--lang", "en",
               "--gender", "female"])
    line = one_line_error(capsys, alone=False)
    assert rc == 2 and "read-only" in line and str(tmpfs) in line


def test_home_that_is_a_file(tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    monkeypatch.setenv("OMNISTUDIO_HOME", str(home))
    rc = main(["voices", "add", "File Home", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "--lang", "en",
               "--gender", "female"])
    line = one_line_error(capsys, alone=False)
    assert rc == 2 and str(home) in line and "a file where a folder should be" in line


@pytest.mark.parametrize("raised", [MemoryError(), RuntimeError("could not create a primitive"),
                                    RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 "
                                                 "bytes"), RuntimeError("CUDA out of memory. Tried to allocate 2 GiB")],
                         ids=["MemoryError", "oneDNN", "torch CPU", "torch CUDA"])
def test_out_of_memory_is_one_line(raised: BaseException, tmp_path: Path, ref_wav: Path,
                                   monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Low memory below the first check (``ulimit -v``): torch says so with a RuntimeError, not a MemoryError."""
    from omnistudio.engine.engine import Engine

    def no_memory(*_a: object, **_k: object) -> None:
        raise raised

    monkeypatch.setattr(Engine, "render_tokens", no_memory)  # say renders through the link
    rc = main(["say", "Hello.", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "-o", str(tmp_path / "x.wav"),
               *TINY])
    assert rc == 2 and "out of memory" in one_line_error(capsys, alone=False)


def test_broken_pipe_is_a_quiet_exit(tmp_path: Path, ref_wav: Path) -> None:
    run = subprocess.run(f"{sys.executable} -m omnistudio.cli analyze {ref_wav} | head -c 1", shell=True,
                         capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                         executable="/bin/bash", check=False)
    assert run.stderr == ""
    code = subprocess.run(f"set -o pipefail; {sys.executable} -m omnistudio.cli analyze {ref_wav} | head -c 1 "
                          ">/dev/null", shell=True, executable="/bin/bash", check=False).returncode
    assert code == 0
