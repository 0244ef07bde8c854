#!/usr/bin/env bash
# Runs the whole test suite in .venv with a PulseAudio null sink as the audio device.
# Called by `make test` (which installs system packages and the venv first).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
# A private PulseAudio server with a null sink: sounddevice's `default` device for the device tests.
if PULSE_EXPORTS=$(bash scripts/pulse-null-sink.sh start); then
  eval "$PULSE_EXPORTS"
  trap 'bash scripts/pulse-null-sink.sh stop "$OMNISTUDIO_PULSE_DIR"' EXIT
else
  echo "test.sh: could not start the PulseAudio null sink; device tests will skip" >&2
fi
# Architecture and lint first (seconds): import-linter's contracts and ruff, configured in pyproject.toml.
"$BIN/lint-imports" --no-cache || exit 1
"$BIN/ruff" check . || exit 1
"$BIN/python" -m pytest "$@"
status=$?
if [ $status -eq 5 ]; then
  echo "test.sh: pytest collected no tests: failing" >&2
  exit 1
fi
exit $status
