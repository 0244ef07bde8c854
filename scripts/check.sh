#!/usr/bin/env bash
# The fast tier (`make check`): lint, the import contracts and every test outside the server, Ray,
# Whisper, UI, device and slow tiers (tests/conftest.py assigns them). `make test` runs everything.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
# The fast tier waits on fake links and the tiny model only: a hang (a stream that never renders ahead, a
# lost wake-up) is reported after 60 s here, not after the full suite's 300 s (tests/support/wait.py).
export OMNISTUDIO_TEST_HANG_S=${OMNISTUDIO_TEST_HANG_S:-60}
bash scripts/lint.sh || exit 1
"$BIN/python" -m pytest --timeout=240 -n 2 --dist loadgroup --no-loadscope-reorder -q -m "not (server or ray or whisper or ui or device or slow)" --durations=10 "$@"
