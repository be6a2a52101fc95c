#!/usr/bin/env bash
# A headless Chromium for the dashboard's browser test (tests/dashboard_browser.rs): Debian's
# `chromium` package, installed with apt-get when no Chromium is on the machine yet.
# Idempotent: with a Chromium in place it does nothing and needs no network.
# Prints the chromium path on stdout.
set -euo pipefail

log() { echo "fetch-chromium: $*" >&2; }

find_chromium() {
  local c
  if [[ -n "${FLEETBOT_CHROMIUM:-}" && -x "${FLEETBOT_CHROMIUM}" ]]; then
    echo "$FLEETBOT_CHROMIUM"
    return 0
  fi
  for c in chromium chromium-browser; do
    if command -v "$c" >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

if path="$(find_chromium)"; then
  echo "$path"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  log "no chromium found and no apt-get to install it; set FLEETBOT_CHROMIUM"
  exit 1
fi
SUDO=""
if [[ "$(id -u)" != 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    log "installing chromium needs root (or sudo)"
    exit 1
  fi
fi
log "installing Debian's chromium with apt-get"
export DEBIAN_FRONTEND=noninteractive
# A stale package list cannot find the package: refresh it once and retry.
$SUDO apt-get install -y --no-install-recommends chromium >&2 \
  || { $SUDO apt-get update >&2 && $SUDO apt-get install -y --no-install-recommends chromium >&2; }
path="$(find_chromium)" || { log "chromium was installed but is not on PATH"; exit 1; }
"$path" --version >&2
echo "$path"
