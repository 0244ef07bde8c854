#!/usr/bin/env bash
# Debian packages the tests need: PortAudio for sounddevice, a PulseAudio server for the
# null-sink output device, ALSA's pulse plugin, and flite (real speech: the ASR test and the
# test roster's four different voices); mediainfo, ffmpeg (ffprobe) and chromium read our delivery files
# and open the compliance report in the tests, as a broadcast chain would; Node (with npm) runs the MOS
# tests' NCS (mos-connection): Debian's nodejs and npm where no node is installed.
# Installs only what is missing; says what to run when it cannot install (not root, no apt).
# With CI set, anything still missing fails (exit 1, one line): CI must not skip those tests.
set -euo pipefail
PACKAGES=(libportaudio2 pulseaudio pulseaudio-utils libasound2-plugins flite mediainfo ffmpeg chromium)
ci() { case "${CI:-}" in ""|0|false|no) return 1 ;; *) return 0 ;; esac; }
command -v node >/dev/null && command -v npm >/dev/null || PACKAGES+=(nodejs npm)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
cannot() {
  if ci; then echo "system-deps: CI=$CI and missing ${missing[*]}: $1" >&2; exit 1; fi
  echo "system-deps: $1" >&2; exit 0
}
command -v apt-get >/dev/null || cannot "no apt-get here; install: ${missing[*]}"
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO=sudo; else
    cannot "not root; run: sudo apt-get install ${missing[*]}"; fi
fi
echo "system-deps: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
