"""Ctrl-C at any moment and SIGTERM mid-render: one line, exit 130 / 143, no temp files, the previous
output pair untouched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.audio import REF_TEXT
from support.wait import wait_until
from support.wait import HANG_S



def _render(tmp_path: Path, ref_wav: Path, *extra: str) -> list[str]:
    script = tmp_path / "s.txt"
    script.write_text("\n".join(f"This is sentence number {i} of the evening news." for i in range(80)) + "\n")
    return [sys.executable, "-m", "omnistudio.cli", *extra, "render", str(script), "-o", str(tmp_path / "out.wav"),
            "--model", "tiny", "--device", "cpu", "--num-step", "4", "--ref-audio", str(ref_wav),
            "--ref-text", REF_TEXT]


def _previous_pair(tmp_path: Path) -> dict[str, bytes]:
    (tmp_path / "out.wav").write_bytes(b"previous take")
    (tmp_path / "out.wav.json").write_bytes(b'{"previous": true}')
    return {p.name: p.read_bytes() for p in tmp_path.iterdir()}


def _handles_sigterm(pid: int) -> bool:
    """Whether the process catches SIGTERM yet, i.e. ``omnistudio.cli`` has started (``SigCgt`` in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def test_sigint_at_a_tenth_of_a_second(tmp_path: Path, ref_wav: Path) -> None:
    """0.1 s after the start, or as soon as the CLI's first line has run when the interpreter's own
    start-up (site-packages, before any of our code) takes longer on a loaded machine."""
    command = _render(tmp_path, ref_wav)
    before = _previous_pair(tmp_path)
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not _handles_sigterm(proc.pid) and proc.poll() is None:
        time.sleep(0.002)
    time.sleep(max(0.0, 0.1 - (time.monotonic() - started)))
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, err
    assert [line for line in err.splitlines() if line.strip()] == ["omnistudio: interrupted"], err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def _read_until(proc: subprocess.Popen[str], needle: str) -> list[str]:
    """stderr lines up to and including the first that holds ``needle`` (all of them if it never comes)."""
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if needle in line:
            break
    return seen


def test_sigint_while_loading_prints_one_line(tmp_path: Path, ref_wav: Path) -> None:
    """SIGINT once the model has started loading: its warning line (a random-weight checkpoint) comes
    just before the model's modules are imported and its weights read."""
    command = _render(tmp_path, ref_wav)
    before = _previous_pair(tmp_path)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = _read_until(proc, "random-weight checkpoint")
    assert "random-weight checkpoint" in seen[-1] and proc.poll() is None, "".join(seen)
    proc.send_signal(signal.SIGINT)
    _out, rest = proc.communicate(timeout=HANG_S)
    err = "".join(seen) + rest
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "omnistudio: interrupted"
    assert [line for line in err.splitlines() if line.startswith("omnistudio:")] == ["omnistudio: interrupted"]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def _spooled_bytes(pid: int, folder: Path) -> int:
    """Bytes in the files ``pid`` holds open in ``folder``: the take's audio spool (an unlinked temp file
    in the temp folder, audio/spool.py) grows with every rendered sentence."""
    total = 0
    fds = Path(f"/proc/{pid}/fd")
    try:
        links = list(fds.iterdir())
    except OSError:
        return 0
    for fd in links:
        try:
            if os.readlink(fd).startswith(str(folder)):
                total += os.stat(fd).st_size
        except OSError:
            continue
    return total


def test_sigterm_mid_render(tmp_path: Path, ref_wav: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """SIGTERM once the take holds a second of rendered audio (79 of 80 sentences still to come)."""
    command = _render(tmp_path, ref_wav, "-v")
    before = _previous_pair(tmp_path)
    spool = tmp_path_factory.mktemp("spool")  # the process's temp folder
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "COLUMNS": "400", "TMPDIR": str(spool)})
    seen = _read_until(proc, "cudnn.benchmark")  # the model is loaded: rendering starts now
    wait_until(lambda: _spooled_bytes(proc.pid, spool) >= 24_000 * 4 or proc.poll() is not None, timeout=HANG_S,
               interval=0.02, what="a second of rendered audio")
    assert proc.poll() is None, "".join(seen)
    proc.send_signal(signal.SIGTERM)
    _out, rest = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 143, "".join(seen) + rest
    assert "Traceback" not in rest
    assert [line for line in rest.splitlines() if line.startswith("omnistudio:")] == ["omnistudio: terminated"]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no temp file, old pair intact
    assert [p.name for p in spool.iterdir() if not p.name.startswith("torchinductor_")] == []  # nor in TMPDIR


def _signal_once_written(tmp_path: Path, ref_wav: Path, signum: int, when: str) -> tuple[int, str]:
    """Render one sentence; once ``one.wav.json`` exists, send ``signum`` at once (``when="written"``) or
    wait until the process no longer runs a handler for ``signum`` (``when="unhandled"``: the interpreter's
    last stretch of shut-down, after its exit callbacks), then send ``signum``. (returncode, stderr)."""
    script = tmp_path / "one.txt"
    script.write_text("Good evening.\n")
    out = tmp_path / "one.wav"
    for stale in (out, tmp_path / "one.wav.json"):
        stale.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "omnistudio.cli", "render", str(script), "-o", str(out),
                             "--model", "tiny", "--device", "cpu", "--num-step", "2", "--ref-audio", str(ref_wav),
                             "--ref-text", REF_TEXT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (tmp_path / "one.wav.json").exists() or proc.poll() is not None, timeout=600,
                   interval=0.001, what="the sidecar")
        while when == "unhandled" and proc.poll() is None and _handles(proc.pid, signum):
            time.sleep(0.0005)
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, err


def _handles(pid: int, signum: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught >> (signum - 1) & 1)


def _done_or_one_line(code: int, err: str, signum: int) -> None:
    """Done (0, nothing about the signal) or interrupted (130/143 and its one line); never a traceback."""
    assert "Traceback" not in err and "Exception ignored" not in err, err
    ours = [line for line in err.splitlines() if line.startswith("omnistudio:")]
    if signum == signal.SIGTERM:
        assert (code, ours) in ((0, []), (143, ["omnistudio: terminated"])), err
    else:
        assert (code, ours) in ((0, []), (130, ["omnistudio: interrupted"])), err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_once_the_output_is_written(tmp_path: Path, ref_wav: Path, signum: int) -> None:
    """A signal as soon as the output pair is committed (the command returning, threads joined, exit
    callbacks): the run counts as done or as interrupted, each with its usual ending."""
    code, err = _signal_once_written(tmp_path, ref_wav, signum, "written")
    _done_or_one_line(code, err, signum)


def test_a_signal_while_the_interpreter_collects_its_garbage(tmp_path: Path, ref_wav: Path) -> None:
    """After the exit callbacks the interpreter stops handling signals: SIGTERM then must not kill the
    process silently (-15) once its run is done."""
    code, err = _signal_once_written(tmp_path, ref_wav, signal.SIGTERM, "unhandled")
    _done_or_one_line(code, err, signal.SIGTERM)
    assert code == 0, err


def test_a_signal_between_the_commands_end_and_its_ending_leaves_with_its_status() -> None:
    """The narrowest window, made certain: the command has returned 0 (its output committed), and SIGINT
    comes before the ending takes over the signals (``settle``). It ends the process with the command's
    status, no line and no traceback (a race once seen in the full suite: a KeyboardInterrupt raised
    after ``main``'s ``try``)."""
    probe = (
        "import os, signal, sys\n"
        "from omnistudio import cli, signals\n"
        "def command(argv):\n"
        "    signals.install()\n"
        "    print('done', flush=True)\n"
        "    return 0\n"
        "real = signals.settle\n"
        "def late_settle(code, line=None):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    for _ in range(1000):\n"
        "        pass\n"  # the handler runs at the next bytecode boundary, before the real settle
        "    real(code, line)\n"
        "cli._main = command\n"
        "signals.settle = late_settle\n"
        "sys.exit(cli.main())\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_S)
    assert (done.returncode, done.stdout, done.stderr) == (0, "done\n", "")
