"""/dev/shm handoff: documented header, mode 0600, atomic replace, names without slashes."""

from __future__ import annotations

import stat
import struct
from pathlib import Path

import numpy as np
import pytest

from omnistudio.audio.shm import HEADER, MAGIC, SHM_DIR, check_shm_name, read_shm, remove_shm, write_shm
from omnistudio.errors import UserError


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
