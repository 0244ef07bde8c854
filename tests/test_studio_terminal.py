"""What a C library writes to file descriptor 2 while the studio's screen is up goes to the studio's log,
never over the screen (issue 46: "ALSA lib pcm.c:8570:(snd_pcm_recover) underrun occurred" printed over the
title, editor and telemetry).

The real redirection is tested, not a pilot's headless driver: a Textual app runs under its Linux driver
in a pseudo-terminal (a child process), inside ``library_output_to_log``, and writes to fd 2 through
libc's ``write`` as ALSA does; the terminal must receive the app's screen and not that line, and the log
must hold it. Then fd 2 is the terminal again. In this process: everything is put back after an exception,
and ``omnistudio studio`` runs its app inside the redirection.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from support.wait import HANG_S

from omnistudio.commands.studio_terminal import library_output_to_log

ALSA = b"ALSA lib pcm.c:8570:(snd_pcm_recover) underrun occurred\n"

PROBE = """
import ctypes, os, sys
from pathlib import Path
from textual.app import App
from textual.widgets import Static
from omnistudio.commands.studio_terminal import library_output_to_log

LINE = ALSA_LINE

class Probe(App):
    def compose(self):
        yield Static("PROBE-SCREEN-DRAWN")

    def on_mount(self):
        self.call_after_refresh(self.native)

    def native(self):
        libc = ctypes.CDLL(None)
        libc.write(2, LINE, len(LINE))  # as ALSA does, under Python
        self.set_timer(0.2, self.exit)

with library_output_to_log(Path(sys.argv[1])):
    Probe().run()
os.write(2, b"AFTER-THE-APP\\n")
""".replace("ALSA_LINE", repr(ALSA))


def _run_in_pty(args: list[str]) -> tuple[int, bytes]:
    """Run ``args`` with stdin, stdout and stderr on an 80x24 pseudo-terminal; its exit status and all the
    terminal received."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
                            start_new_session=True)
    os.close(slave)
    received = bytearray()
    deadline = time.monotonic() + HANG_S
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(master, 65536)
            except OSError as exc:  # EIO: the child closed the terminal
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            received += chunk
            if b"\x1b[6n" in chunk:  # a cursor position query: answer as a terminal would
                os.write(master, b"\x1b[1;1R")
        return proc.wait(timeout=HANG_S), bytes(received)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)


@pytest.mark.timeout(300)
def test_a_native_write_to_fd2_goes_to_the_log_not_over_the_screen(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "studio.log"
    status, received = _run_in_pty([sys.executable, "-c", PROBE, str(log)])
    assert status == 0, received.decode(errors="replace")[-2000:]
    assert b"PROBE-SCREEN-DRAWN" in received  # the app drew on the terminal (through the saved descriptor)
    assert b"underrun occurred" not in received  # the library's line never reached the screen
    assert ALSA.decode() in log.read_text()  # it is in the studio's log
    assert received.rstrip().endswith(b"AFTER-THE-APP")  # after the app, fd 2 is the terminal again


def test_everything_is_put_back_after_a_crash(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    import logging

    log = tmp_path / "studio.log"
    streams, handlers = (sys.__stderr__, sys.stderr), logging.getLogger().handlers[:]
    with pytest.raises(RuntimeError), library_output_to_log(log) as terminal:
        assert terminal is not None and sys.__stderr__ is terminal and terminal.fileno() != 2
        os.write(2, b"native inside\n")
        logging.getLogger("omnistudio.test").warning("a log record inside")
        print("python inside", file=sys.stderr, flush=True)  # Python's stderr stays on the terminal
        raise RuntimeError("a crash in the app")
    os.write(2, b"native after\n")
    assert (sys.__stderr__, sys.stderr) == streams
    assert logging.getLogger().handlers == handlers
    err = capfd.readouterr().err
    assert "native after" in err and "python inside" in err and "native inside" not in err
    text = log.read_text()
    assert "native inside" in text and "a log record inside" in text


def test_the_studio_command_runs_its_app_with_fd2_on_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capfd: pytest.CaptureFixture[str]) -> None:
    from omnistudio.app import StudioApp
    from omnistudio.commands import studio
    from omnistudio.config import locations

    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path))
    seen: list[bool] = []

    def run(app: StudioApp) -> None:  # stands in for the screen: a library writes while it is up
        seen.append(sys.__stderr__ is not None and sys.__stderr__.fileno() != 2)
        os.write(2, ALSA)

    monkeypatch.setattr(StudioApp, "run", run)
    args = argparse.Namespace(audio="virtual", project=None, model="tiny", device="cpu", server=None)
    assert studio.run(args) == 0
    assert seen == [True]
    assert "underrun occurred" not in capfd.readouterr().err
    assert ALSA.decode() in locations().studio_log.read_text()
