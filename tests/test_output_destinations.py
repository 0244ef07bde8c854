"""What is at an output path decides how it is written (issue 39, defects 1-3), through the commands users run:
a FIFO or a device is written into, never replaced by a file; a link is followed; ``-o -`` is standard
output; a socket is refused; a group of files (audio, sidecar, captions) is committed all or nothing and a
failure names the user's file; no writer puts a file inside a project folder.

Devices are reached through links in the test's folder: if a writer replaced what it was given, it would
replace the link, never the machine's /dev/null."""

from __future__ import annotations

import io
import os
import socket
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
import soundfile as sf

from omnistudio.cli import main
from support.audio import REF_TEXT
from support.cli import one_line_error

TINY = ["--model", "tiny", "--device", "cpu", "--num-step", "2"]


@pytest.fixture(autouse=True)
def shared_engine(monkeypatch: pytest.MonkeyPatch, tiny_engine: Any) -> None:
    """The commands render on the session's tiny engine (loaded once) instead of loading their own: what is
    tested here is where the files go."""
    monkeypatch.setattr("omnistudio.voices.session.open_engine", lambda config, progress=None: tiny_engine)


def say(out: Path | str, ref_wav: Path, *extra: str) -> list[str]:
    return ["say", "Good evening.", "-o", str(out), "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, *TINY,
            *extra]


def render(script: Path, out: Path | str, ref_wav: Path, *extra: str) -> list[str]:
    return ["render", str(script), "-o", str(out), "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, *TINY,
            *extra]


class FifoReader:
    """Reads a FIFO to its end on a thread (what a user's `cat f.wav > x &` does)."""

    def __init__(self, path: Path) -> None:
        self.data = b""
        self.thread = threading.Thread(target=self._read, args=(path,), daemon=True)
        self.thread.start()

    def _read(self, path: Path) -> None:
        with open(path, "rb") as fh:
            self.data = fh.read()

    def wav(self) -> Any:
        self.thread.join(60)
        assert not self.thread.is_alive()
        return sf.read(io.BytesIO(self.data), dtype="float32")


@pytest.mark.parametrize("command", ["say", "render"])
def test_a_fifo_is_written_into_and_stays_a_fifo(command: str, tmp_path: Path, ref_wav: Path) -> None:
    fifo = tmp_path / "live.wav"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    script = tmp_path / "s.txt"
    script.write_text("Good evening.\n", encoding="utf-8")
    args = say(fifo, ref_wav) if command == "say" else render(script, fifo, ref_wav)
    assert main(args) == 0
    pcm, sr = reader.wav()
    assert sr == 24_000 and len(pcm) > 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["live.wav", "s.txt"])  # no sidecar beside it


def test_devices_and_links_are_written_through_never_replaced(tmp_path: Path, ref_wav: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    null = tmp_path / "null.wav"
    null.symlink_to("/dev/null")
    assert main(say(null, ref_wav)) == 0
    assert null.is_symlink() and stat.S_ISCHR(os.stat(null).st_mode)
    full = tmp_path / "full.wav"
    full.symlink_to("/dev/full")
    assert main(say(full, ref_wav)) == 2
    one_line_error(capsys, str(full), alone=False)  # no space left: said of the user's path
    assert full.is_symlink()
    target = tmp_path / "real.wav"
    target.write_bytes(b"old")
    link = tmp_path / "link.wav"
    link.symlink_to(target)
    assert main(say(link, ref_wav)) == 0
    assert link.is_symlink() and sf.info(str(target)).frames > 0  # the link's target got the take


def test_standard_output_and_its_refusals(tmp_path: Path, ref_wav: Path,
                                          capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(say("-", ref_wav)) == 0
    pcm, sr = sf.read(io.BytesIO(capsysbinary.readouterr().out), dtype="float32")
    assert sr == 24_000 and len(pcm) > 0
    script = tmp_path / "s.txt"
    script.write_text("Good evening.\n", encoding="utf-8")
    for args, said in ((say("-", ref_wav, "--json"), "--json cannot go there too"),
                       (render(script, "-", ref_wav, "--captions", "srt"), "--captions writes files beside the audio")):
        assert main(args) == 2
        captured = capsysbinary.readouterr()
        lines = captured.err.decode().strip().splitlines()
        assert captured.out == b"" and len(lines) == 1 and said in lines[0], lines


def test_a_socket_is_refused(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.wav"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        assert main(say(path, ref_wav)) == 2
        one_line_error(capsys, "is a socket")
        assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_lexicon_export_writes_into_a_fifo_and_refuses_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path / "home"))
    assert main(["lexicon", "add", "Milei", "mi lei", "--lang", "en"]) == 0
    capsys.readouterr()
    fifo = tmp_path / "out.pls"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    assert main(["lexicon", "export", str(fifo), "--lang", "en"]) == 0
    reader.thread.join(30)
    assert b"<lexicon" in reader.data and b"Milei" in reader.data and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    project = tmp_path / "P.omniproj"
    project.mkdir()
    (project / "project.json").write_text("{}", encoding="utf-8")
    assert main(["lexicon", "export", str(project / "project.json"), "--lang", "en"]) == 2
    one_line_error(capsys, "is in the project folder")
    assert (project / "project.json").read_text() == "{}"


def test_say_refuses_a_path_inside_a_project(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    take = tmp_path / "P.omniproj" / "takes" / "0123456789abcdef01234567.flac"
    take.parent.mkdir(parents=True)
    take.write_bytes(b"a take")
    assert main(say(take, ref_wav)) == 2
    one_line_error(capsys, "is in the project folder")
    assert take.read_bytes() == b"a take"


@pytest.mark.parametrize("fails_at", ["keep", "rename"])
def test_a_failed_group_leaves_every_file_as_it_was_and_names_the_users_file(
        fails_at: str, tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """render --captions srt,vtt into an existing group, with out.srt unwritable (immutable, as chattr +i
    makes it: linking or replacing it fails): the new take must not stand beside the old sidecar."""
    import omnistudio.commit as export

    script = tmp_path / "s.txt"
    script.write_text("Good evening. Here is the news.\n", encoding="utf-8")
    out = tmp_path / "out.wav"
    assert main(render(script, out, ref_wav, "--captions", "srt,vtt", "--seed", "1")) == 0
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    real = {"keep": os.link, "rename": os.replace}[fails_at]

    def immutable(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        if str(dst if fails_at == "rename" else src).endswith("out.srt"):
            raise PermissionError(1, "Operation not permitted")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(export.os, "link" if fails_at == "keep" else "replace", immutable)
    assert main(render(script, out, ref_wav, "--captions", "srt,vtt", "--seed", "2")) == 2
    line = one_line_error(capsys, "out.srt", alone=False)
    assert ".omni-" not in line  # the user's file, not a temp
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
