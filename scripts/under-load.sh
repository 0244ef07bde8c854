#!/usr/bin/env bash
# The suite's reliability proof: N full runs (default 3) of scripts/test.sh on a fresh clone of this
# repository's HEAD while a CPU burner keeps every core busy. Uses this checkout's .venv (make install
# first); the clone's own sources come first on PYTHONPATH. One summary line per run on stdout and in
# $OUT/summary.txt; each run's whole log beside it.
#   bash scripts/under-load.sh [RUNS]      OUT=/tmp/under-load by default
set -uo pipefail
cd "$(dirname "$0")/.."
HERE=$(pwd)
RUNS=${1:-3}
OUT=${OUT:-/tmp/under-load}
CLONE=$OUT/clone
rm -rf "$OUT" && mkdir -p "$OUT"
git clone -q "$HERE" "$CLONE" || exit 1
CORES=$(nproc)
# stress-ng where installed, else one Python busy loop per core.
if command -v stress-ng >/dev/null; then
  stress-ng --cpu "$CORES" >/dev/null 2>&1 &
  BURNER="stress-ng --cpu $CORES"
else
  python3 -c 'import multiprocessing as m, itertools
def spin(_):
    for _ in itertools.count(): pass
m.Pool('"$CORES"').map(spin, range('"$CORES"'))' &
  BURNER="python3 busy loop x $CORES"
fi
BURN=$!
# the busy loop's pool workers first: once their parent is gone they are nobody's children (pkill -P misses them)
trap 'pkill -P $BURN 2>/dev/null; kill -- $BURN 2>/dev/null' EXIT
echo "commit $(git -C "$CLONE" log --oneline -1) | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) x $CORES | burner: $BURNER" | tee "$OUT/summary.txt"
failed=0
for i in $(seq "$RUNS"); do
  start=$(date +%s)
  (cd "$CLONE" && CI=true VENV="$HERE/.venv" PYTHONPATH="$CLONE" bash scripts/test.sh -p no:cacheprovider) > "$OUT/run$i.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || failed=1
  echo "run $i: rc=$rc wall=$(( $(date +%s) - start ))s load=$(cut -d' ' -f1-3 /proc/loadavg) :: $(grep -E '(passed|failed|error).* in [0-9.]+s' "$OUT/run$i.log" | tail -1 | tr -d '=')" | tee -a "$OUT/summary.txt"
done
exit $failed
