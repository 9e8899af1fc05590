#!/usr/bin/env bash
# Runs two builds at once and fails if either fails: `make run` and `make test` build the site
# (its tools, then the wasm) beside the server. Each of the two spends minutes on one core (the
# wasm's and the server's own crates, wasm-bindgen's install), so on 2 cores both together take
# little more than the longer one. The first command's lines are marked `site |`.
#   scripts/side-by-side.sh "FIRST COMMAND" "SECOND COMMAND"
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 FIRST SECOND" >&2; exit 2; }
bash -c "$1" > >(sed -u 's/^/site | /') 2>&1 &
first=$!
bash -c "$2"
second=$?
wait "$first"
first_status=$?
[ "$first_status" -eq 0 ] || echo "side-by-side: failed ($first_status): $1" >&2
[ "$second" -eq 0 ] || echo "side-by-side: failed ($second): $2" >&2
[ "$first_status" -eq 0 ] && [ "$second" -eq 0 ]
