#!/usr/bin/env bash
# Benchmark the fast sampler against stock OmniVoice on a bare GPU machine.
#
# Creates a virtual environment, installs this package (and its pinned
# dependencies) into it, then runs `omnistudio bench` on the `full` random-weight
# checkpoint (real geometry; built offline, no model hub needed) twice: with
# torch.compile off, and with compile on (backbone + vocoder, CUDA graphs via
# "reduce-overhead" unless COMPILE_MODE says otherwise). Prints one JSON object
# per run on stdout (progress and logs go to stderr). Budget: 8 minutes.
#
# Usage: bench/gpu.sh            (from anywhere; env: SENTENCES=3 COMPILE_MODE=reduce-overhead
#                                 VENV=/tmp/omnistudio-gpu-venv PYTHON=python3)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-/tmp/omnistudio-gpu-venv}"
PYTHON="${PYTHON:-python3}"
SENTENCES="${SENTENCES:-3}"
COMPILE_MODE="${COMPILE_MODE:-reduce-overhead}"
export OMNISTUDIO_HOME="${OMNISTUDIO_HOME:-/tmp/omnistudio-gpu-home}"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false

deadline=$((SECONDS + 480))
left() { echo $((deadline - SECONDS)); }

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
# The default (CUDA) torch wheel from PyPI; omnivoice pins the rest.
"$VENV/bin/python" -m pip install --quiet -e "$ROOT" >&2

"$VENV/bin/python" - <<'PY' >&2
import torch
assert torch.cuda.is_available(), "no CUDA device visible to torch"
print("torch", torch.__version__, "on", torch.cuda.get_device_name(0))
PY

# Build the checkpoint once (not timed by the bench).
"$VENV/bin/python" -c "from omnistudio.engine import checkpoints; checkpoints.ensure_checkpoint('full')" >&2

run_bench() {  # $1 = seconds allowed, then bench options
  local allowed="$1"; shift
  timeout --signal=INT "$allowed" "$VENV/bin/omnistudio" bench --model full --device cuda --json "$@"
}

echo "bench: every technique, compile off ($(left) s left)" >&2
run_bench $(( $(left) / 2 )) --sentences "$SENTENCES" --only all --compile off \
  || echo "compile-off run failed or ran out of time" >&2
echo "bench: combined, compile $COMPILE_MODE ($(left) s left)" >&2
run_bench "$(left)" --sentences "$SENTENCES" --only combined --compile "$COMPILE_MODE" || {
  echo "compile run did not finish in time; retrying with --compile default --only combined" >&2
  run_bench "$(left)" --sentences 1 --only combined --compile default || true
}
