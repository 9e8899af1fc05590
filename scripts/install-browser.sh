#!/usr/bin/env bash
# Installs the browser tests' chromium + chromium-driver from Debian, unless they are there. The
# dashboard's build tools are scripts/install-wasm-tools.sh's (the site's build runs it).
set -euo pipefail
missing=()
for pkg in chromium chromium-driver; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-browser: installing ${missing[*]}" >&2
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
