"""Ctrl-C at any moment and SIGTERM mid-render: one line, exit 130 / 143, no temp files, the previous
output pair untouched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REF_TEXT = "This is the reference voice for our test."


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
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert [line for line in err.splitlines() if line.strip()] == ["omnistudio: interrupted"], err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_sigint_while_loading_prints_one_line(tmp_path: Path, ref_wav: Path) -> None:
    command = _render(tmp_path, ref_wav)
    before = _previous_pair(tmp_path)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # importing torch, numpy, scipy...
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "omnistudio: interrupted"
    assert [line for line in err.splitlines() if line.startswith("omnistudio:")] == ["omnistudio: interrupted"]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_sigterm_mid_render(tmp_path: Path, ref_wav: Path) -> None:
    command = _render(tmp_path, ref_wav, "-v")
    before = _previous_pair(tmp_path)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "COLUMNS": "400"})
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:  # the model is loaded: rendering starts now
        seen.append(line)
        if "cudnn.benchmark" in line:
            break
    time.sleep(1.5)
    assert proc.poll() is None, "".join(seen)
    proc.send_signal(signal.SIGTERM)
    _out, rest = proc.communicate(timeout=120)
    assert proc.returncode == 143, "".join(seen) + rest
    assert "Traceback" not in rest
    assert [line for line in rest.splitlines() if line.startswith("omnistudio:")] == ["omnistudio: terminated"]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no temp file, old pair intact
