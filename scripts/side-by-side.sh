#!/usr/bin/env bash
# Runs two builds at once and fails if either fails: `make run` and `make test` build the site
# (its tools, then the wasm) beside the server. The server's build is the longer and ends with
# minutes on one core (its own crate); the first command runs at the lowest priority, so it takes
# only the CPU the second leaves (those minutes, and the gaps between dependencies) and never
# slows it. Cold `make run` on 2 cores: 1,399 s with the two as equals, 1,361 s this way (the
# server's build ends 6 minutes sooner, the site after it). The first command's lines are marked
# `site |`.
#   scripts/side-by-side.sh "FIRST COMMAND" "SECOND COMMAND"
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 FIRST SECOND" >&2; exit 2; }
nice -n 19 bash -c "$1" > >(sed -u 's/^/site | /') 2>&1 &
first=$!
bash -c "$2"
second=$?
wait "$first"
first_status=$?
[ "$first_status" -eq 0 ] || echo "side-by-side: failed ($first_status): $1" >&2
[ "$second" -eq 0 ] || echo "side-by-side: failed ($second): $2" >&2
[ "$first_status" -eq 0 ] && [ "$second" -eq 0 ]
