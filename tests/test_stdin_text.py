"""``say -`` and ``render -`` (issue 51): standard input read as it arrives, in pieces, as a pipe gives it;
the file is the one ``render FILE`` writes for the same text and seed; bad input is one line, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import soundfile as sf

CLI = [sys.executable, "-m", "omnistudio.cli"]
TEXT = "Good evening. The price rose to 3.5 dollars.\n[:es] Buenas noches.\nBack to the desk."
FLAGS = ["--voice", "ruby", "--model", "tiny", "--device", "cpu", "--num-step", "2", "--seed", "9"]


def _piped(runs: list[list[str]], pieces: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """Run the CLI once per ``runs`` entry, all at once, with ``pieces`` written to each one's standard input
    one at a time, as a model writes."""
    procs = [subprocess.Popen([*CLI, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for args in runs]
    for piece in pieces:
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(piece)
            proc.stdin.flush()
        time.sleep(0.05)  # pieces, not one read: the pipe gives them as they come
    done = []
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.stdin = None  # closed: communicate only reads
        out, err = proc.communicate(timeout=600)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def test_say_and_render_from_a_pipe_write_the_file_of_the_whole_text(omnistudio_home: Path, tmp_path: Path) -> None:
    """``render FILE`` and both pipes run side by side (each its own process, the same thread count)."""
    script = tmp_path / "news.txt"
    script.write_text(TEXT, encoding="utf-8")
    whole = tmp_path / "whole.wav"
    reference = subprocess.Popen([*CLI, "render", str(script), "-o", str(whole), *FLAGS], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    pieces = [TEXT[i:i + 5] for i in range(0, len(TEXT), 5)]
    piped = _piped([[command, "-", "-o", str(tmp_path / f"{command}.wav"), *FLAGS] for command in ("say", "render")],
                   pieces)
    _, err = reference.communicate(timeout=600)
    assert reference.returncode == 0, err
    expected = sf.read(whole, dtype="float32")[0]
    for command, done in zip(("say", "render"), piped):
        assert done.returncode == 0, done.stderr
        assert (sf.read(tmp_path / f"{command}.wav", dtype="float32")[0] == expected).all()
        assert (tmp_path / f"{command}.wav.json").is_file()  # finished like every render: its sidecar too


class _Pipe:
    """Standard input that is a pipe holding ``data`` (what ``feed_stdin`` reads with os.read)."""

    def __init__(self, data: bytes) -> None:
        read, write = os.pipe()
        os.write(write, data)
        os.close(write)
        self.fd = read

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return False


def test_bad_input_from_a_pipe_is_one_line_and_writes_nothing(omnistudio_home: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.cli import main

    out = tmp_path / "x.wav"
    cases = [
        (["say", "-", "-o", str(out), *FLAGS], b"   \n", "no text came in: nothing to speak"),
        (["say", "-", *FLAGS], b"Hello.", "nothing to do: give -o OUT.wav, --play, or both"),
        (["say", "Hello.", "--play", *FLAGS], b"", "--play plays text read from standard input"),
        (["render", "-", "-o", str(out), *FLAGS], b"Hello.\n[ruby", "line 2: unclosed tag"),
        (["say", "-", "-o", str(out), *FLAGS], b"Hola \xff.", "standard input is not UTF-8 text"),
        (["render", "-", "-o", str(out), "--project", str(tmp_path / "p.omniproj"), *FLAGS], b"Hi.",
         "--project, --verify and --retake read a script file"),
    ]
    for args, data, line in cases:
        pipe = _Pipe(data)
        monkeypatch.setattr(sys, "stdin", pipe)
        try:
            assert main(args) == 2, args
        finally:
            os.close(pipe.fd)
        err = capsys.readouterr().err
        assert line in err and "Traceback" not in err, (args, err)
        assert not out.exists()
    monkeypatch.setattr(sys, "stdin", type("Tty", (), {"isatty": lambda self: True})())
    assert main(["say", "-", "--play", *FLAGS]) == 2
    assert "pipe it in" in capsys.readouterr().err
