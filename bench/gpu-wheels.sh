#!/usr/bin/env bash
# Run HERE (a machine that reaches PyPI) before bench/gpu.sh is carried to a GPU machine that reaches
# nothing. Writes .whl/ (git-ignored): the wheels for the GPU image's Python (CPython 3.12, manylinux
# x86-64 up to glibc 2.28; GPU_PYTHON and GLIBC change them) that the image lacks, derived, never listed:
#   1. the project's own dependency closure: pyproject.toml's [project].dependencies resolved together by
#      pip for that target (`pip install --dry-run --report --python-version --platform --only-binary`);
#      a requirement published only as a source archive (srt) is built into a pure-Python wheel here and
#      offered to the resolver, and the resolution is tried again;
#   2. only the distributions the steps import (bench/preflight.py --distributions, run with this
#      checkout's .venv; the GPU's preflight imports the same): declared but never imported stays out
#      (omnivoice's gradio and librosa, lingua: the whole closure is about 440 MiB);
#   3. less the image's: torch, torchaudio and all they require (triton, nvidia-*, ...), and what
#      bench/gpu-image.txt lists (the image's `pip list`, which gpu.sh writes beside its results);
#   4. downloaded at the resolved versions (bench/wheelset.py picks them), and its size checked against
#      CARRY_MIB (56: the device tool carries the tree and the `carry` paths within 64 MiB in all).
# Then pass carry: [".whl"] to the device tool; gpu.sh installs them (see its header).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
GPU_PYTHON=${GPU_PYTHON:-3.12}
GLIBC=${GLIBC:-28}  # manylinux_2_5 .. manylinux_2_$GLIBC
CARRY_MIB=${CARRY_MIB:-56}
abi="cp${GPU_PYTHON/./}"
platforms=(--platform manylinux2014_x86_64)  # pip adds manylinux2010 and manylinux1
for minor in $(seq 5 "$GLIBC"); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
target=(--only-binary=:all: --python-version "$GPU_PYTHON" --implementation cp --abi "$abi" "${platforms[@]}")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/built"
"$PY" -c 'import sys, tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
  > "$work/requirements.txt"

for _try in 1 2 3 4 5 6; do
  if "$PY" -m pip install --quiet --dry-run --ignore-installed --report "$work/report.json" "${target[@]}" \
      --find-links "$work/built" --target "$work/none" -r "$work/requirements.txt" 2> "$work/pip.err"; then
    break
  fi
  sdist=$(sed -n 's/.*No matching distribution found for \([A-Za-z0-9._-]*\).*/\1/p' "$work/pip.err" | head -n 1)
  if [ -z "$sdist" ] || ls "$work/built" | grep -qi "^${sdist//-/_}-"; then
    grep -v 'is ignored' "$work/pip.err" >&2; echo "gpu-wheels.sh: the closure does not resolve for cp${GPU_PYTHON/./}" >&2
    exit 1
  fi
  "$PY" -m pip wheel --quiet --no-deps -w "$work/built" "$sdist" 2>/dev/null
  echo "gpu-wheels.sh: $sdist has no wheel for the target; built one here: $(ls "$work/built")" >&2
done
[ -s "$work/report.json" ] || { echo "gpu-wheels.sh: no resolution after 6 tries" >&2; exit 1; }

"$PY" bench/preflight.py --distributions > "$work/imported.txt"
image=()
[ -f bench/gpu-image.txt ] && image=(bench/gpu-image.txt)
"$PY" bench/wheelset.py "$work/report.json" "$work/imported.txt" "${image[@]}" > "$work/pins.txt"

grep -qx '/.whl/' .gitignore || echo '/.whl/' >> .gitignore
rm -rf .whl && mkdir -p .whl
"$PY" -m pip download --quiet --no-deps "${target[@]}" --find-links "$work/built" -d .whl -r "$work/pins.txt" \
  2> >(grep -v 'is ignored' >&2)
size=$(du -sm .whl | cut -f1)
echo "gpu-wheels.sh: $(ls .whl | wc -l) wheels, $(du -sh .whl | cut -f1) in .whl/ (carry: [\".whl\"])" >&2
if [ "$size" -gt "$CARRY_MIB" ]; then
  echo "gpu-wheels.sh: .whl/ is $size MiB, over CARRY_MIB=$CARRY_MIB; largest: $(ls -S .whl | head -n 3 | tr '\n' ' ')" >&2
  exit 1
fi
