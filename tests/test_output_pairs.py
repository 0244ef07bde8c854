"""`--shm` failures never touch the file output; the output pair is replaced together or not at all."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omnistudio.audio.finishing import FinishingOptions, Delivery, finish_render
from omnistudio.cli import main
from omnistudio.errors import UserError
from support.audio import REF_TEXT

SR = 24_000


def _tone(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (0.2 * np.sin(2 * np.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def test_shm_name_that_is_a_directory_is_refused_before_any_work(tmp_path: Path, ref_wav: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm")
    name = f"omnistudio-test-dir-{tmp_path.name}"
    (shm / name).mkdir()
    try:
        script = tmp_path / "s.txt"
        script.write_text("Good evening.\n")
        out = tmp_path / "out.wav"
        out.write_bytes(b"previous take")
        rc = main(["render", str(script), "-o", str(out), "--shm", name, "--model", "tiny", "--device", "cpu",
                   "--num-step", "2", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT])
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.startswith("omnistudio:")]
        assert rc == 2 and len(lines) == 1 and "is a directory" in lines[0] and "internal error" not in err
        assert out.read_bytes() == b"previous take"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out.wav", "s.txt"]
    finally:
        (shm / name).rmdir()


def test_failed_shm_commit_leaves_the_file_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even if the shm target turns into a directory after the early check, the file pair stays."""
    import omnistudio.audio.finishing as finishing

    out = tmp_path / "news.wav"
    finish_render([(_tone(2.0), 0.0)], Delivery(out, SR))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    root = tmp_path / "shm"
    root.mkdir()
    (root / "take").mkdir()  # the check again at commit refuses it (os.replace would fail there too)
    monkeypatch.setattr(finishing, "check_shm_target", lambda name, r=root: Path(r) / name)  # the early check passes
    with pytest.raises(UserError, match="is a directory"):
        finish_render([(_tone(3.0), 0.0)], Delivery(out, SR, FinishingOptions(shm_name="take"), shm_root=root))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    assert [p.name for p in root.iterdir()] == ["take"]


def test_a_failed_sidecar_write_leaves_the_previous_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import omnistudio.audio.finishing as finishing

    out = tmp_path / "news.flac"
    finish_render([(_tone(2.0), 0.0)], Delivery(out, SR))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def broken(payload: dict) -> object:
        def write(_tmp: Path) -> None:
            raise UserError("sidecar could not be written")
        return write

    monkeypatch.setattr(finishing, "json_writer", broken)
    with pytest.raises(UserError):
        finish_render([(_tone(3.0), 0.0)], Delivery(out, SR))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
