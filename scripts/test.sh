#!/usr/bin/env bash
# Runs the whole test suite in .venv with a PulseAudio null sink as the audio device.
# Called by `make test` (which installs system packages and the venv first).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
if [ -x scripts/pulse-null-sink.sh ] || [ -f scripts/pulse-null-sink.sh ]; then
  PULSE_ENV=$(mktemp)
  if bash scripts/pulse-null-sink.sh start "$PULSE_ENV"; then
    set -a; . "$PULSE_ENV"; set +a
    trap 'bash scripts/pulse-null-sink.sh stop "$PULSE_ENV"; rm -f "$PULSE_ENV"' EXIT
  else
    echo "test.sh: could not start the PulseAudio null sink; device tests will skip" >&2
  fi
fi
"$BIN/python" -m pytest "$@"
status=$?
if [ $status -eq 5 ]; then
  echo "test.sh: pytest collected no tests: failing" >&2
  exit 1
fi
exit $status
