"""bench/gpu.sh keeps to its budget: each step gets the smaller of its cap and what is left, a step cut
off at its limit is recorded (and the run goes on), and every step's line is written as it ends.

The script runs here with a stand-in for the GPU machine's Python (``VENV``): the benches answer at once
or hang, so what is checked is the script's own bookkeeping, not a measurement."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.wait import HANG_S

ROOT = Path(__file__).resolve().parents[1]
STEPS = ["graphs", "stream-eager", "stream-replayed", "serve", "vocoder", "libraries", "probe", "compile"]

STAND_IN = """#!/usr/bin/env bash
# The GPU machine's python: `bench --only graphs` answers at once, `bench --stream` hangs (cut off by the
# budget); the preflight passes; anything else (the record helper, the libraries probe) is real Python.
case "$*" in
  *"preflight.py"*) exit 0 ;;
  *"--only graphs"*) echo '{"variants": []}' ;;
  *"--stream"*) exec sleep 600 ;;
  *"omnistudio.cli"*) echo '{"ran": true}' ;;
  *"ensure_checkpoint"*) exit 0 ;;
  *) exec {python} "$@" ;;
esac
"""


def run_script(tmp_path: Path, budget: int) -> list[dict[str, object]]:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    stand_in = venv / "bin" / "python"
    stand_in.write_text(STAND_IN.replace("{python}", sys.executable))
    stand_in.chmod(0o755)
    results = tmp_path / "results.jsonl"
    env = {**os.environ, "VENV": str(venv), "MODEL": "tiny", "DEVICE": "cpu", "BUDGET": str(budget),
           "MIN_STEP": "1", "GRACE": "1", "RESULTS": str(results)}
    proc = subprocess.run(["bash", str(ROOT / "bench" / "gpu.sh")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in results.read_text().splitlines()]


def test_a_step_cut_off_by_the_budget_is_recorded_and_the_rest_are_skipped(tmp_path: Path) -> None:
    rows = run_script(tmp_path, budget=4)
    assert [r["step"] for r in rows] == STEPS  # one line per step, in order of value
    graphs, cut, *rest = rows
    assert graphs["rc"] == 0 and graphs["result"] == {"variants": []}
    assert cut["rc"] == 124 and cut["result"] is None  # SIGINT at its limit: what it measured is kept (none)
    assert 1 <= int(cut["allowed_s"]) <= 4 - 1  # its share: the budget left, less the grace before SIGKILL
    assert all(r["rc"] == -1 and r["result"] is None for r in rest)  # no time left: skipped, and said so

