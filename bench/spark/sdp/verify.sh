#!/usr/bin/env bash
# Reckon, the Spark peer and DuckDB on the same landed tickets: days 1-30, then 31-35 (Spark's
# second run must read only the 5 new files). Each time the three gold_daily_account_status must
# be identical. Prints the seconds of each. Usage: bench/spark/sdp/verify.sh [WORK_DIR]
# TICKETS_PER_DAY (default 300) sets the size; about 28,600 make 1 M tickets over 35 days.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
reckon="${CARGO_TARGET_DIR:-$HOME/.cache/reckon-target}/debug/reckon"
py="$HOME/.cache/reckon/sdp-venv/bin/python"
work=$(realpath -m "${1:-$(mktemp -d)}")
mkdir -p "$work" && cd "$work"
"$here/setup.sh" > /dev/null
r() { "$reckon" --data "$work/reckon" "$@"; }
if [[ ! -d reckon/project ]]; then
  r pipeline example support "$work/reckon/project" > /dev/null
  # Only the three tables the peer has: drop the example's accounts challenge (AUTO CDC).
  sed -i '/^-- The challenge/,$d' reckon/project/transformations/support.sql
fi

for days in 1-30 31-35; do
  r pipeline land support --days "$days" --tickets-per-day "${TICKETS_PER_DAY:-300}" > /dev/null
  start=$EPOCHREALTIME; r pipeline run "$work/reckon/project" > /dev/null
  reckon_s=$(awk "BEGIN { printf \"%.3f\", $EPOCHREALTIME - $start }")
  r table gold_daily_account_status --json > reckon.jsonl
  "$here/run.sh" reckon/landing/tickets spark > spark.json
  "$py" "$here/duckdb_gold.py" reckon/landing/tickets > duckdb.json
  "$py" - "$days" "$reckon_s" <<'PY'
import json, sys
reckon = sorted([r["ticket_date"], r["account_id"], r["status"], r["count"]]
                for r in map(json.loads, open("reckon.jsonl")))
spark, duck = json.load(open("spark.json")), json.load(open("duckdb.json"))
same = reckon == spark["gold"] == duck["gold"]
print(f"days {sys.argv[1]}: reckon {sys.argv[2]} s, spark {spark['seconds']} s, duckdb "
      f"{duck['seconds']} s; gold {len(reckon)} rows, {'identical' if same else 'DIFFERENT'}")
sys.exit(0 if same else 1)
PY
done
# Spark's streams: the last batch of each must have read only the last 5 files.
for t in bronze_tickets silver_tickets; do
  log=$(ls -d spark/checkpoints/_checkpoints/*/*/$t/$t/0/sources/0)
  last=$(ls "$log" | grep -v crc | sort -n | tail -1)
  echo "spark $t: batch $last read $(grep -c '"path"' "$log/$last") file(s)"
done
