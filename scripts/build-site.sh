#!/usr/bin/env bash
# Builds the dashboard's browser side into $RECKON_SITE (default $CARGO_TARGET_DIR/site):
#   pkg/reckon.js + pkg/reckon.wasm  the hydrating wasm of `app` (feature `hydrate`), bound by
#                                    wasm-bindgen under the names Leptos's hydration script asks
#                                    for (LEPTOS_OUTPUT_NAME=reckon, see .cargo/config.toml)
#   pkg/reckon.css                   style/main.css
# `--release` builds an optimized wasm and shrinks it with wasm-opt when that is installed.
# The server is built by cargo alone; this needs only the wasm32 target and wasm-bindgen-cli,
# which must match the `wasm-bindgen` crate's version (scripts/install-wasm-tools.sh, run first).
# The wasm has a target folder of its own ($CARGO_TARGET_DIR/site-build): cargo builds in one
# target folder at a time, and this build runs beside the server's (scripts/side-by-side.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/install-wasm-tools.sh"
builds="${CARGO_TARGET_DIR:-$here/target}"
site="${RECKON_SITE:-$builds/site}"
target="$builds/site-build"
profile=debug
flags=()
if [ "${1:-}" = "--release" ]; then
  profile=release
  flags=(--release)
fi

cd "$here"
CARGO_TARGET_DIR="$target" cargo build -p app --lib --target wasm32-unknown-unknown \
  --no-default-features --features hydrate "${flags[@]}"

pkg="$site/pkg"
staging="$site/.pkg-new"
rm -rf "$staging"
mkdir -p "$staging"
wasm-bindgen --target web --no-typescript --out-dir "$staging" --out-name reckon \
  "$target/wasm32-unknown-unknown/$profile/app.wasm"
mv "$staging/reckon_bg.wasm" "$staging/reckon.wasm"
if [ "$profile" = release ] && command -v wasm-opt >/dev/null 2>&1; then
  # The features rustc's wasm32 target turns on by default.
  wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue -o "$staging/reckon.wasm" "$staging/reckon.wasm"
fi
cp style/main.css "$staging/reckon.css"
# Swapped in whole, so a server running meanwhile never serves half a build.
rm -rf "$pkg.old"
[ -d "$pkg" ] && mv "$pkg" "$pkg.old"
mv "$staging" "$pkg"
rm -rf "$pkg.old"
echo "site: $pkg ($profile)"
