#!/usr/bin/env bash
# Every benchmark once at a small size, so that none can rot unseen (CI runs this after the tests).
# A smoke run proves a bench still runs: it must finish and print the lines it exists for (its
# ratio lines, or its figure where its ratios need a peer). No figure is judged here; speed
# goals live in `make bench`. Peers (Spark, DuckDB) run only when installed, and the bench says
# when it skipped one. bench/results.md is left as it is (RECKON_BENCH_SMOKE=1).
#
# The benches are built in the dev profile, whose dependencies the tests built already.
set -euo pipefail
cd "$(dirname "$0")/.."
export RECKON_BENCH_SMOKE=1

# name | the line it must print (an extended regex) | its small size
smoke=(
  "pipeline|^ratio incremental big/small|--events 3000 --sends 3 --cold-runs 1 --no-warm-up"
  "dashboard|^runs page, 50 runs|--runs 50 --rounds 3"
  "board|^class board, 10 labs x 5 runs|--labs 10 --runs 5 --asks 5"
  "labs|^resident memory of the server|--readers 8 --seconds 4 --labs 2 --senders 4 --rss-runs 10"
  "support|^gold view from all 35 files|--tickets-per-day 40"
  "cdc|^ratio cdc_incremental big/small|--changes 20000 --keys 2000"
  "child|^ratio incremental_child big/small|--runs 2 --big 20000"
  "attack|^server resident memory: idle|--readers 20 --wall 5"
)

# Every bench of the package has a line above: a bench added later must be given a small size.
declared=$(sed -n '/^\[\[bench\]\]/{n;s/^name = "\(.*\)"/\1/p}' server/Cargo.toml | sort)
listed=$(printf '%s\n' "${smoke[@]}" | cut -d'|' -f1 | sort)
if [ "$declared" != "$listed" ]; then
  echo "bench-smoke: server/Cargo.toml's benches ($(echo $declared)) are not the ones given a" \
    "small size here ($(echo $listed)): add the new one to scripts/bench-smoke.sh" >&2
  exit 1
fi

cargo bench --profile dev -q -p reckon --benches --no-run
failed=()
for entry in "${smoke[@]}"; do
  IFS='|' read -r name marker size <<<"$entry"
  echo "== bench $name ($size)"
  started=$(date +%s)
  # shellcheck disable=SC2086 # the size is words of arguments
  if ! out=$(cargo bench --profile dev -q -p reckon --bench "$name" -- $size 2>&1); then
    echo "$out"
    echo "bench-smoke: $name failed" >&2
    failed+=("$name")
    continue
  fi
  echo "$out" | grep -E '^ratio |skipped in this smoke run|left as' || true
  if ! echo "$out" | grep -Eq "$marker"; then
    echo "$out"
    echo "bench-smoke: $name finished without a line matching /$marker/" >&2
    failed+=("$name")
    continue
  fi
  echo "   ok in $(($(date +%s) - started)) s"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench-smoke: ${#failed[@]} bench(es) cannot run: ${failed[*]}" >&2
  exit 1
fi
echo "bench-smoke: every bench ran"
