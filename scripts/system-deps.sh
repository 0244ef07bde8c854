#!/usr/bin/env bash
# Debian packages the tests need: PortAudio for sounddevice, a PulseAudio server for the
# null-sink output device, ALSA's pulse plugin, and flite (real speech for the ASR test).
# Installs only what is missing; says what to run when it cannot install (not root, no apt).
set -euo pipefail
PACKAGES=(libportaudio2 pulseaudio pulseaudio-utils libasound2-plugins flite)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "system-deps: no apt-get here; install: ${missing[*]}" >&2; exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO=sudo; else
    echo "system-deps: not root; run: sudo apt-get install ${missing[*]}" >&2; exit 0; fi
fi
echo "system-deps: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
