#!/usr/bin/env bash
# The course on both pipelines, from the same topic: each send followed by a run of Reckon and a
# run of the Spark peer (a process per stream run, as the seed runs it); then both hourly_sales
# side by side. They must be identical. Usage: bench/spark/course.sh [WORK_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
reckon="${CARGO_TARGET_DIR:-$HOME/.cache/reckon-target}/debug/reckon"
work=${1:-$(mktemp -d)}
topic="peer.course.$(date +%s)"
mkdir -p "$work"
r() { "$reckon" --data "$work/reckon" --topic "$topic" "$@"; }
for batch in 1 2 3 3 4 5; do
  r produce --scenario course --batch "$batch" >/dev/null
  r run >/dev/null
  python3 "$here/bench/spark/pipeline.py" --dir "$work/spark" --topic "$topic" run 2>&1 | grep '^timing' | tr '\n' ' '
  echo "(batch $batch)"
done
r table hourly_sales --json | python3 -c 'import json,sys; [print(json.dumps({k: r[k] for k in ("hour","orders","revenue")}, sort_keys=True)) for r in map(json.loads, sys.stdin)]' > "$work/reckon.jsonl"
python3 "$here/bench/spark/pipeline.py" --dir "$work/spark" table hourly_sales 2>/dev/null > "$work/spark.jsonl"
if diff "$work/reckon.jsonl" "$work/spark.jsonl"; then
  echo "hourly_sales identical:"; cat "$work/reckon.jsonl"
else
  echo "hourly_sales differ (reckon <, spark >)"; exit 1
fi
