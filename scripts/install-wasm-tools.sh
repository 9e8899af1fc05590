#!/usr/bin/env bash
# Installs the dashboard's build tools, skipping each one already there: the wasm32 target,
# wasm-bindgen-cli (its lockfile needs a patch here, see ../shared/STACK.md) and binaryen's
# wasm-opt from npm (release builds only). scripts/build-site.sh runs it first.
set -euo pipefail
cache="${RECKON_CACHE:-$HOME/.cache/reckon}"
mkdir -p "$cache"

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

# A thin release build of the one binary needed, without TLS (it downloads nothing): under 3
# minutes on 2 cores. The version must equal the `wasm-bindgen` crate's in Cargo.toml.
if ! installed wasm-bindgen 0.2.130; then
  dir=$(crate_source wasm-bindgen-cli 0.2.130)
  (cd "$dir" && cargo update -q -p webpki-roots --precise 1.0.10 \
    && env -u CARGO_TARGET_DIR CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
      cargo install -q --path . --locked --no-default-features --bin wasm-bindgen)
fi

if [ ! -x "$cache/binaryen/node_modules/.bin/wasm-opt" ]; then
  mkdir -p "$cache/binaryen"
  npm install -s --prefix "$cache/binaryen" binaryen@132.0.0 >/dev/null
fi
