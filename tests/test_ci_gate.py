"""CI never passes by skipping: a missing null sink stops scripts/test.sh with one line, and a
skipped test is a failure when CI is set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from support.wait import HANG_S

ROOT = Path(__file__).resolve().parents[1]


def test_test_sh_under_ci_fails_with_one_line_when_the_null_sink_cannot_start(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pulseaudio").write_text("#!/bin/sh\nexit 1\n")  # a PulseAudio that cannot start
    (fake / "pulseaudio").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PULSE")}
    env.update(CI="true", VENV=str(Path(sys.executable).parents[1]), PATH=f"{fake}:{env['PATH']}",
               OMNISTUDIO_PULSE_SETTLE="0")
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "test.sh"), "tests/test_paths.py"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.startswith("test.sh:")]
    assert lines and lines[-1].startswith("test.sh: CI=true but the PulseAudio null sink did not start"), proc.stderr
    assert "passed" not in proc.stdout  # pytest never ran


def test_a_skip_is_a_failure_under_ci(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('omni_conftest', {str(ROOT / 'tests' / 'conftest.py')!r})\n"
        "mod = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(mod)\n"
        "pytest_runtest_makereport = mod.pytest_runtest_makereport\n")
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\ndef test_needs_flite():\n    pytest.skip('flite not installed')\n")
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'tests'}:{os.environ.get('PYTHONPATH', '')}"}
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py"]
    outputs = {}
    for ci, code, word in (("true", 1, "failed"), ("", 0, "skipped")):
        proc = subprocess.run(run, cwd=tmp_path, env={**env, "CI": ci}, capture_output=True, text=True,
                              timeout=HANG_S)
        assert proc.returncode == code and f"1 {word}" in proc.stdout, proc.stdout
        outputs[ci] = proc.stdout
    assert "skipped under CI=true, which must run every test: Skipped: flite not installed" in outputs["true"]
