#!/usr/bin/env bash
# Installs the dashboard's build and browser-test tools, skipping each one already there:
# Debian's chromium + chromium-driver, the wasm32 target, cargo-leptos and wasm-bindgen-cli (both
# need a patched lockfile here, see ../shared/STACK.md) and binaryen's wasm-opt from npm.
set -euo pipefail
cache="${RECKON_CACHE:-$HOME/.cache/reckon}"
mkdir -p "$cache"

missing=()
for pkg in chromium chromium-driver; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-tools: installing ${missing[*]}" >&2
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

rustup target list --installed | grep -qx wasm32-unknown-unknown \
  || rustup target add wasm32-unknown-unknown

# Fetches a crate's source from crates.io into the cache and prints its folder.
crate_source() {
  local name=$1 version=$2 dir="$cache/src/$1-$2"
  if [ ! -f "$dir/Cargo.toml" ]; then
    mkdir -p "$cache/src"
    curl -fsSL "https://static.crates.io/crates/$name/$name-$version.crate" | tar -xz -C "$cache/src"
  fi
  echo "$dir"
}

installed() { [ -x "$HOME/.cargo/bin/$1" ] && "$HOME/.cargo/bin/$1" --version 2>/dev/null | grep -q "$2"; }

# Installs run with thin release builds: the tools' fat LTO costs minutes of linking on 2 cores.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
unset CARGO_TARGET_DIR

if ! installed wasm-bindgen 0.2.130; then
  dir=$(crate_source wasm-bindgen-cli 0.2.130)
  (cd "$dir" && cargo update -q -p webpki-roots --precise 1.0.10 && cargo install -q --path . --locked)
fi

if ! installed cargo-leptos 0.3.11; then
  dir=$(crate_source cargo-leptos 0.3.11)
  (cd "$dir" && rm -f rust-toolchain.toml \
    && cargo update -q -p cargo-util-schemas --precise 0.14.1 && cargo install -q --path . --locked)
fi

if [ ! -x "$cache/binaryen/node_modules/.bin/wasm-opt" ]; then
  mkdir -p "$cache/binaryen"
  npm install -s --prefix "$cache/binaryen" binaryen@132.0.0 >/dev/null
fi
