#!/usr/bin/env bash
# Measure the engine on a lent GPU within one hard budget (default 8 minutes, BUDGET=seconds).
#
# The budget is hard for everything, setup included: the wheels' install, the preflight, the CUDA check
# and the checkpoint build each run under `timeout` with what is left of the budget (less GRACE), and the
# run ends at the first of them that fails, with its one line last. Then every step gets the smaller of its
# own cap and what is left (less GRACE, the time between the step's SIGINT and a SIGKILL), and is skipped
# (and recorded as skipped) when that is under MIN_STEP seconds. Each step's JSON result is appended to
# RESULTS (one line per step: {"step", "rc", "allowed_s", "wall_s", "result"}) the moment it ends, so
# a run killed from outside keeps what it measured. Setup, in order:
#   install     on an image with torch and no network: the carried wheels (WHEELS, default .whl/) into
#               /tmp/omnistudio-site with `pip install --no-index --no-deps --target`, used through a
#               wrapper $VENV/bin/python (PYTHONPATH=repo:site, then the image's own packages); the image's
#               `pip list` is written first to gpu-image.txt beside RESULTS (copy it to bench/gpu-image.txt:
#               gpu-wheels.sh leaves out what the image has). Elsewhere: a venv and `pip install -e .`.
#   preflight   bench/preflight.py imports every module the steps need before anything is loaded, and
#               ends in ONE line naming each one missing (exit 1): nothing is loaded or built then.
#   checkpoint  the random checkpoint is built once (each step is a new process and loads it).
# Steps, ordered by value (one `step NAME CAP COMMAND...` line each, at the end of this script):
#   1 graphs     eager vs replayed step at the auto dtype, batch 1, 3 sentences: median and worst step,
#                RTF, tokens equal (bench --only graphs)
#   2 stream     streaming TTFA, the static step eager (OMNISTUDIO_CUDA_GRAPHS=0) then replayed
#   3 serve      the speech server at 1, 8 and 16 clients, batching off and on
#   4 vocoder    the vocoder alone: after diffusion vs again, allocator activity, fp16/bf16 vs fp32
#   5 libraries  which alternative step backends are importable (omnivoice-triton, flashinfer)
#   5b probe     a never-seen length after warm-up: worst step vs median, the step's kernels (liger or exact)
#   6 compile    the compiled backbone's length sweep, only with the time left
#
# How the wheels travel to a GPU machine with no network: run `bash bench/gpu-wheels.sh` here first (it
# needs PyPI): it writes .whl/ (git-ignored, so not part of the copied tree) and prints its size, which it
# keeps under 56 MiB; then name the folder in the device tool's `carry` (carry: [".whl"]; carried paths and
# the tree travel within 64 MiB in all). gpu.sh installs what is in WHEELS when the image's python has torch.
# Usage: bench/gpu.sh   (env: BUDGET=480 RESULTS=$OUT/gpu-bench.jsonl MODEL=full DEVICE=cuda
#                        SENTENCES=3 VENV=/tmp/omnistudio-gpu-venv PYTHON=python3 MIN_STEP=20 GRACE=10
#                        WHEELS=.whl)
# MODEL=tiny DEVICE=cpu VENV=.venv checks the script itself on a machine without a GPU.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUDGET="${BUDGET:-480}"
MIN_STEP="${MIN_STEP:-20}"
GRACE="${GRACE:-10}"  # seconds a step has between SIGINT at its limit and SIGKILL (kept out of its share)
MODEL="${MODEL:-full}"
DEVICE="${DEVICE:-cuda}"
SENTENCES="${SENTENCES:-3}"
VENV="${VENV:-/tmp/omnistudio-gpu-venv}"
PYTHON="${PYTHON:-python3}"
WHEELS="${WHEELS:-$ROOT/.whl}"
RESULTS="${RESULTS:-${OUT:-/tmp}/gpu-bench.jsonl}"
export OMNISTUDIO_HOME="${OMNISTUDIO_HOME:-/tmp/omnistudio-gpu-home}"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false

deadline=$((SECONDS + BUDGET))
left() { echo $((deadline - SECONDS)); }
mkdir -p "$(dirname "$RESULTS")" && : > "$RESULTS"

# A setup phase under what is left of the budget; the run ends on its failure (its own line last, or ours).
setup() {  # name command...
  local name="$1" allowed rc; shift
  allowed=$(( $(left) - GRACE ))
  if [ "$allowed" -lt 1 ]; then
    echo "gpu.sh: $name: no budget left (BUDGET=$BUDGET s)" >&2; exit 124
  fi
  echo "gpu.sh: $name (up to $allowed s)" >&2
  timeout --signal=INT --kill-after="$GRACE" "$allowed" "$@"
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "gpu.sh: $name ran past the $allowed s left of the budget" >&2
  fi
  [ "$rc" -eq 0 ] || exit "$rc"
}

if [ -d "$WHEELS" ] && "$PYTHON" -c "import torch" 2>/dev/null; then
  # A GPU image with torch but no network: the wheels bench/gpu-wheels.sh fetched (carried, see above).
  setup image-list sh -c '"$0" -m pip list --format=freeze > "$1" 2>/dev/null || true' "$PYTHON" \
    "$(dirname "$RESULTS")/gpu-image.txt"
  setup install "$PYTHON" -m pip install --quiet --no-index --no-deps --no-compile --upgrade \
    --target /tmp/omnistudio-site "$WHEELS"/*.whl
  mkdir -p "$VENV/bin"
  cat > "$VENV/bin/python" <<SH
#!/usr/bin/env bash
PYTHONPATH="$ROOT:/tmp/omnistudio-site\${PYTHONPATH:+:\$PYTHONPATH}" exec "$(command -v "$PYTHON")" "\$@"
SH
  chmod +x "$VENV/bin/python"
elif [ ! -x "$VENV/bin/python" ]; then
  setup venv "$PYTHON" -m venv "$VENV"
  setup install "$VENV/bin/python" -m pip install --quiet -e "$ROOT"  # the default (CUDA) torch wheel from PyPI
fi
PY="$VENV/bin/python"

# One line for one step: what it was allowed, how long it ran, its exit status and its JSON (or null).
record() {  # name rc allowed wall output-file
  "$PY" - "$@" >> "$RESULTS" <<'PY'
import json, sys
name, rc, allowed, wall, path = sys.argv[1:6]
text = open(path).read().strip().splitlines() if path else []
try:
    result = json.loads(text[-1]) if text else None
except ValueError:
    result = None
print(json.dumps({"step": name, "rc": int(rc), "allowed_s": int(allowed), "wall_s": int(wall), "result": result}))
PY
}

step() {  # name cap command...
  local name="$1" cap="$2"; shift 2
  local remaining allowed started rc out
  remaining=$(( $(left) - GRACE ))
  allowed=$(( cap < remaining ? cap : remaining ))
  if [ "$allowed" -lt "$MIN_STEP" ]; then
    echo "gpu.sh: $name skipped: $remaining s of the budget left" >&2
    record "$name" -1 "$allowed" 0 ""
    return
  fi
  echo "gpu.sh: $name (up to $allowed s; $remaining s left)" >&2
  out=$(mktemp)
  started=$SECONDS
  timeout --signal=INT --kill-after="$GRACE" "$allowed" "$@" > "$out"
  rc=$?
  record "$name" "$rc" "$allowed" $((SECONDS - started)) "$out"
  tail -n 1 "$out"
  rm -f "$out"
}

bench=("$PY" -m omnistudio.cli bench --model "$MODEL" --device "$DEVICE" --json)

setup preflight "$PY" "$ROOT/bench/preflight.py"
if [ "$DEVICE" = cuda ]; then
  setup cuda "$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device visible to torch'; \
print('torch', torch.__version__, 'on', torch.cuda.get_device_name(0))"
fi
# The checkpoint is built once, inside the budget (not timed by any step); a failure is one line.
setup checkpoint "$PY" -c "
import sys
from omnistudio.engine import checkpoints
from omnistudio.errors import describe
try:
    checkpoints.ensure_checkpoint('$MODEL')
except Exception as exc:
    sys.exit(f'gpu.sh: checkpoint $MODEL: {describe(exc)}')"

step graphs 150 "${bench[@]}" --only graphs --sentences "$SENTENCES"
step stream-eager 60 env OMNISTUDIO_CUDA_GRAPHS=0 "${bench[@]}" --stream --sentences 8
step stream-replayed 60 "${bench[@]}" --stream --sentences 8
step serve 150 "${bench[@]}" --serve --clients 1,8,16 --sentences 16
step vocoder 60 "${bench[@]}" --vocoder --sentences 6
step libraries 20 "$PY" -c "
import importlib.util, json
print(json.dumps({name: importlib.util.find_spec(name) is not None for name in ('omnivoice_triton', 'flashinfer')}))"
step probe 60 "$PY" -m omnistudio.bench.probe --model "$MODEL" --device "$DEVICE"  # issue 47: a never-seen length
step compile "$(left)" "${bench[@]}" --lengths --sentences 10 --compile default
echo "gpu.sh: done, $(left) s of the budget left; results in $RESULTS" >&2
