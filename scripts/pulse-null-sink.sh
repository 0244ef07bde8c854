#!/usr/bin/env bash
# Start or stop a private PulseAudio server with a null sink, for tests and CI.
#
#   eval "$(scripts/pulse-null-sink.sh start)"   # prints `export ...` lines (also written to $DIR/env)
#   pytest -m device ...                         # sounddevice's `default` device is now the null sink
#   scripts/pulse-null-sink.sh stop              # uses $OMNISTUDIO_PULSE_DIR (or: stop DIR)
#
# The server runs in its own runtime dir (HOME, PULSE_RUNTIME_PATH), so it
# never touches a desktop session. `<sink>.monitor` is the default source, so
# whatever is played can be recorded back. A silent keepalive stream stays on
# the sink: without it a new stream can stall ~1.5 s at start. Its latency is
# 100 ms: at 20 ms the server and pacat took 6.6% of a core all the time (1.1%
# at 100 ms), and 100 ms removes the stall as well (docs/decisions.md).
set -euo pipefail

SINK=${OMNISTUDIO_PULSE_SINK:-omnistudio_null}
RATE=${OMNISTUDIO_PULSE_RATE:-48000}

die() { echo "pulse-null-sink: $*" >&2; exit 1; }

start() {
  for tool in pulseaudio pactl pacat; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install pulseaudio pulseaudio-utils libasound2-plugins libportaudio2)"
  done
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/omnistudio-pulse.XXXXXX")
  chmod 700 "$dir"
  export HOME="$dir" PULSE_RUNTIME_PATH="$dir" PULSE_STATE_PATH="$dir" XDG_RUNTIME_DIR="$dir"
  export PULSE_SERVER="unix:$dir/native"
  pulseaudio -n --daemonize=no --exit-idle-time=-1 --disallow-exit --use-pid-file=no \
    --system=no --disable-shm=yes --log-target=file:"$dir/pulse.log" \
    -L "module-native-protocol-unix auth-anonymous=1 socket=$dir/native" \
    -L "module-null-sink sink_name=$SINK rate=$RATE" \
    -L "module-always-sink" </dev/null >/dev/null 2>&1 &
  echo $! >"$dir/server.pid"
  local ok=""
  for _ in $(seq 1 100); do
    if pactl info >/dev/null 2>&1; then ok=1; break; fi
    kill -0 "$(cat "$dir/server.pid")" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$ok" ]; then
    tail -n 5 "$dir/pulse.log" >&2 2>/dev/null || true
    kill "$(cat "$dir/server.pid")" 2>/dev/null || true
    die "PulseAudio did not start (log: $dir/pulse.log)"
  fi
  pactl set-default-sink "$SINK"
  pactl set-default-source "$SINK.monitor"
  pacat --playback --latency-msec=100 --rate="$RATE" --channels=1 --format=s16le --device="$SINK" \
    </dev/zero >/dev/null 2>&1 &
  echo $! >"$dir/keepalive.pid"
  sleep "${OMNISTUDIO_PULSE_SETTLE:-2}"
  cat >"$dir/env" <<ENV
export OMNISTUDIO_PULSE_DIR='$dir'
export PULSE_SERVER='unix:$dir/native'
export PULSE_RUNTIME_PATH='$dir'
export OMNISTUDIO_PULSE_SINK='$SINK'
ENV
  cat "$dir/env"
}

stop() {
  local dir=${1:-${OMNISTUDIO_PULSE_DIR:-}}
  [ -n "$dir" ] || die "stop: give the runtime dir or set OMNISTUDIO_PULSE_DIR"
  [ -d "$dir" ] || die "stop: $dir is not a directory"
  for name in keepalive server; do
    if [ -f "$dir/$name.pid" ]; then
      kill "$(cat "$dir/$name.pid")" 2>/dev/null || true
    fi
  done
  sleep 0.2
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) shift; stop "${1:-}" ;;
  *) echo "usage: $0 start | stop [DIR]" >&2; exit 2 ;;
esac
