#!/usr/bin/env bash
# The fast tier (`make check`): lint, the import contracts and every test outside the server, Ray,
# Whisper, UI, device and slow tiers (tests/conftest.py assigns them). `make test` runs everything.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
bash scripts/lint.sh || exit 1
"$BIN/python" -m pytest -n 2 --dist loadgroup --no-loadscope-reorder -q -m "not (server or ray or whisper or ui or device or slow)" --durations=10 "$@"
