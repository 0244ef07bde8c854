#!/usr/bin/env bash
# Benchmark the fast sampler against stock OmniVoice on a bare GPU machine.
#
# Creates a virtual environment, installs this package (and its pinned
# dependencies) into it, then runs `omnistudio bench` on the `full` random-weight
# checkpoint (real geometry; built offline, no model hub needed) twice: with
# torch.compile off, and with compile on (backbone + vocoder, CUDA graphs via
# "reduce-overhead" unless COMPILE_MODE says otherwise). Prints one JSON object
# per run on stdout (progress and logs go to stderr), plus the backbone dtypes side by side
# (stock and fast at fp32, fp16 and bf16 in one run, ratios against stock fp32, token parity
# per dtype), the batched-dialogue and streaming (time to first audio) figures, the
# compiled-length sweep (recompilations on novel lengths), and serve-on-Ray throughput with
# 1 replica vs one per GPU, and the int8 backbone on the host CPU (fp32/bf16 x none/int8). Budget: 8 minutes.
# The dtype, length and Ray steps were written without a GPU at hand: untested on CUDA.
#
# On a GPU machine with no network, run bench/gpu-wheels.sh here first and carry .whl along.
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

if [ -d "$ROOT/.whl" ] && "$PYTHON" -c "import torch" 2>/dev/null; then
  # A GPU image with torch but no network: the wheels bench/gpu-wheels.sh fetched (carried as .whl).
  "$PYTHON" -m pip install --quiet --no-index --no-deps --no-compile --upgrade --target /tmp/omnistudio-site \
    "$ROOT"/.whl/*.whl >&2
  mkdir -p "$VENV/bin"
  cat > "$VENV/bin/python" <<SH
#!/usr/bin/env bash
PYTHONPATH="$ROOT:/tmp/omnistudio-site\${PYTHONPATH:+:\$PYTHONPATH}" exec "$(command -v "$PYTHON")" "\$@"
SH
  chmod +x "$VENV/bin/python"
else
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
  # The default (CUDA) torch wheel from PyPI; omnivoice pins the rest.
  "$VENV/bin/python" -m pip install --quiet -e "$ROOT[ray]" >&2
fi

"$VENV/bin/python" - <<'PY' >&2
import torch
assert torch.cuda.is_available(), "no CUDA device visible to torch"
print("torch", torch.__version__, "on", torch.cuda.get_device_name(0))
PY

# Build the checkpoint once (not timed by the bench).
"$VENV/bin/python" -c "from omnistudio.engine import checkpoints; checkpoints.ensure_checkpoint('full')" >&2

run_bench() {  # $1 = seconds allowed, then bench options
  local allowed="$1"; shift
  timeout --signal=INT "$allowed" "$VENV/bin/python" -m omnistudio.cli bench --model full --device cuda --json "$@"
}

echo "bench: every technique, compile off ($(left) s left)" >&2
run_bench $(( $(left) / 2 )) --sentences "$SENTENCES" --only all --compile off \
  || echo "compile-off run failed or ran out of time" >&2
echo "bench: backbone dtypes fp32,fp16,bf16, combined ($(left) s left)" >&2
run_bench 100 --sentences "$SENTENCES" --only combined --dtypes fp32,fp16,bf16 \
  || echo "dtype run failed or ran out of time" >&2
echo "bench: batched vs sequential dialogue ($(left) s left)" >&2
run_bench 90 --dialogue --sentences 8 --batch 2 || echo "dialogue run failed or ran out of time" >&2
echo "bench: stream, time to first audio ($(left) s left)" >&2
run_bench 60 --stream --sentences 8 || echo "stream run failed or ran out of time" >&2
echo "bench: speech server, 1/4/8 clients, batching off vs on ($(left) s left)" >&2
run_bench 120 --serve --clients 1,4,8 --sentences 16 || echo "serve run failed or ran out of time" >&2
echo "bench: 20 sentences of distinct lengths, compiled (default), recompilations ($(left) s left)" >&2
run_bench 90 --lengths --sentences 20 --compile default || echo "length sweep failed or ran out of time" >&2
echo "bench: serve on Ray, 1 replica vs one per GPU ($(left) s left)" >&2
GPUS=$("$VENV/bin/python" -c "import torch; print(torch.cuda.device_count())")
if "$VENV/bin/python" -c "import ray.serve" 2>/dev/null; then
  run_bench 150 --serve --ray --replicas "$( [ "$GPUS" -gt 1 ] && echo "1,$GPUS" || echo 1 )" --sentences 16 \
    --clients 8 || echo "serve-on-Ray run failed or ran out of time" >&2
else
  echo "ray is not installed: serve-on-Ray bench skipped (pip install 'omnistudio[ray]')" >&2
fi
echo "bench: int8 backbone on this machine's CPU (fp32,bf16 x none,int8), combined ($(left) s left)" >&2
# --quantize int8 runs on the CPU only (PyTorch's x86 int8 kernels): these rows measure the host CPU, where a
# GPU machine's Xeon/EPYC has the VNNI/AMX int8 and native bf16 the 2-core AVX2 development box lacks.
grep -o -w -E 'avx2|avx_vnni|avx512_vnni|avx512_bf16|amx_int8|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ' >&2 || true
echo >&2
run_bench 150 --device cpu --sentences 1 --only combined --dtypes fp32,bf16 --quantize none,int8 \
  || echo "int8 rows failed or ran out of time" >&2
echo "bench: the persistent compiled backbone, compile off,default, cold cache then warm ($(left) s left)" >&2
# The first run compiles into an empty cache (compile.builds: source fresh), the second loads it (source cache):
# what a second start of serve/studio pays with OMNISTUDIO_COMPILE=1.
rm -rf "$OMNISTUDIO_HOME/cache/compile"
for cache in cold warm; do
  TORCHINDUCTOR_CACHE_DIR= run_bench 120 --sentences "$SENTENCES" --only combined --dtypes fp32,bf16 \
    --compile off,default || echo "compile rows ($cache cache) failed or ran out of time" >&2
done
echo "bench: combined, compile $COMPILE_MODE ($(left) s left)" >&2
run_bench "$(left)" --sentences "$SENTENCES" --only combined --compile "$COMPILE_MODE" || {
  echo "compile run did not finish in time; retrying with --compile default --only combined" >&2
  run_bench "$(left)" --sentences 1 --only combined --compile default || true
}
