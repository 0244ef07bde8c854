"""/dev/shm handoff: documented header, mode 0600, atomic replace, names without slashes."""

from __future__ import annotations

import os
import stat
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from omnistudio.audio.shm import HEADER, MAGIC, SHM_DIR, check_shm_name, read_shm, remove_shm, write_shm
from omnistudio.errors import UserError
from support.audio import REF_TEXT


def test_header_matches_the_documented_reader(tmp_path: Path) -> None:
    pcm = np.linspace(-1, 1, 4801, dtype=np.float32)
    path = write_shm("take-1", pcm, 24_000, root=tmp_path)
    assert path == tmp_path / "take-1" and HEADER.size == 64
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    raw = path.read_bytes()  # the reader from the module docstring / docs/shm.md, verbatim
    magic, version, channels, rate, dtype, _, frames, offset = struct.unpack_from("<8sHHIHHQI", raw)
    assert (magic, version, channels, rate, dtype, frames, offset) == (MAGIC, 1, 1, 24_000, 1, 4801, 64)
    got = np.frombuffer(raw, "<f4", frames * channels, offset).reshape(frames, channels)
    np.testing.assert_array_equal(got[:, 0], pcm)
    assert len(raw) == 64 + 4801 * 4
    assert [p.name for p in tmp_path.iterdir()] == ["take-1"]  # no temp file left behind


def test_replace_is_whole_and_stereo_round_trips(tmp_path: Path) -> None:
    write_shm("x", np.zeros(10, dtype=np.float32), 24_000, root=tmp_path)
    stereo = np.random.default_rng(0).standard_normal((300, 2)).astype(np.float32)
    write_shm("x", stereo, 48_000, root=tmp_path)
    pcm, rate = read_shm("x", root=tmp_path)
    assert rate == 48_000 and np.array_equal(pcm, stereo)
    remove_shm("x", root=tmp_path)
    assert not (tmp_path / "x").exists()


@pytest.mark.skipif(not SHM_DIR.is_dir(), reason="no /dev/shm here")
def test_real_dev_shm() -> None:
    name = f"omnistudio-test-{np.random.default_rng().integers(1 << 30)}"
    try:
        path = write_shm(name, np.ones(100, dtype=np.float32), 24_000)
        assert path.parent == SHM_DIR and stat.S_IMODE(path.stat().st_mode) == 0o600
        assert read_shm(name)[0].shape == (100, 1)
    finally:
        remove_shm(name)


@pytest.mark.parametrize("name,message", [("a/b", "slash"), ("../etc", "slash"), ("", "empty"),
                                          (".hidden", "letters"), ("sp ace", "letters")])
def test_bad_names(name: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        check_shm_name(name)


def test_not_a_handoff_file(tmp_path: Path) -> None:
    (tmp_path / "junk").write_bytes(b"x" * 100)
    with pytest.raises(UserError, match="not an OmniStudio PCM handoff"):
        read_shm(tmp_path / "junk")


def _refused_render(tmp_path: Path, ref_wav: Path, name: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "s.txt"
    script.write_text("Good evening.\n")
    return subprocess.run([sys.executable, "-m", "omnistudio.cli", "render", str(script), "-o", str(tmp_path / "o.wav"),
                           "--shm", name, "--model", "tiny", "--device", "cpu", "--num-step", "2",
                           "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(not SHM_DIR.is_dir() or os.geteuid() != 0, reason="needs /dev/shm and root (to chown)")
def test_render_refuses_another_users_file_and_a_symlink(tmp_path: Path, ref_wav: Path) -> None:
    """/dev/shm is shared: root's `render --shm NAME` leaves nobody's NAME as it was, and never writes
    through (or over) a symlink named NAME."""
    name = f"omnistudio-test-theirs-{os.getpid()}"
    theirs = SHM_DIR / name
    link = SHM_DIR / f"omnistudio-test-link-{os.getpid()}"
    target = tmp_path / "target"
    target.write_bytes(b"X\n")
    try:
        theirs.write_bytes(b"X\n")
        os.chown(theirs, 65534, 65534)
        done = _refused_render(tmp_path, ref_wav, name)
        lines = [line for line in done.stderr.splitlines() if line.startswith("omnistudio:")]
        assert done.returncode == 2 and len(lines) == 1 and "another user" in lines[0], done.stderr
        assert "Traceback" not in done.stderr
        st = os.lstat(theirs)
        assert (st.st_uid, theirs.read_bytes()) == (65534, b"X\n")
        link.symlink_to(target)
        done = _refused_render(tmp_path, ref_wav, link.name)
        lines = [line for line in done.stderr.splitlines() if line.startswith("omnistudio:")]
        assert done.returncode == 2 and len(lines) == 1 and "symbolic link" in lines[0], done.stderr
        assert link.is_symlink() and target.read_bytes() == b"X\n"
        assert not (tmp_path / "o.wav").exists()
    finally:
        theirs.unlink(missing_ok=True)
        link.unlink(missing_ok=True)


def test_a_file_that_appears_while_the_take_is_written_is_refused(tmp_path: Path) -> None:
    """The lstat check runs again once the new file is staged: a symlink planted meanwhile stays."""
    target = tmp_path / "target"
    target.write_bytes(b"X")

    def plant(_fh: object) -> None:
        (tmp_path / "late").symlink_to(target)

    from omnistudio.audio.shm import shm_writer

    with pytest.raises(UserError, match="symbolic link"):
        shm_writer("late", 0, 24_000, tmp_path, plant)
    assert (tmp_path / "late").is_symlink() and target.read_bytes() == b"X"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["late", "target"]  # no temp left
