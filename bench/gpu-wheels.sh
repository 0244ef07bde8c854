#!/usr/bin/env bash
# Run HERE (a machine that reaches PyPI) before bench/gpu.sh is carried to a GPU machine that
# reaches nothing: downloads, into .whl/ (git-ignored), the Python 3.12 x86-64 wheels that the
# GPU image lacks (it has torch, torchaudio, transformers, numpy, scipy, safetensors, rich).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
rm -rf .whl && mkdir -p .whl
PY=${PYTHON:-python3}
for pkg in omnivoice==0.2.1 pydub soundfile cffi pycparser platformdirs pysbd pyebur128 pyloudnorm sounddevice; do
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any -d .whl "$pkg"
done
# The speech server's stack (bench --serve), with its dependencies resolved together.
"$PY" -m pip download --quiet --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d .whl fastapi uvicorn websockets prometheus-client httpx
du -sh .whl
