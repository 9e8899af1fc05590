#!/usr/bin/env bash
# One incremental run of the Spark Declarative Pipelines peer of week 14's support pipeline.
#   bench/spark/sdp/run.sh LANDING STORAGE [GOLD_FILE]
# LANDING: the folder of landed YYYY-MM-DD.json files. STORAGE: where this peer keeps everything
# between runs (tables in spark-warehouse/, the Hive metastore, the streams' checkpoints), so a
# later call on the same STORAGE reads only the files landed since. Prints one JSON line:
# {"seconds": wall time of spark-pipelines, "rows": n, "gold": [[ticket_date, account_id, status,
# count], ...]} sorted by all four columns (with GOLD_FILE: "gold_file" instead, rows there).
# spark-pipelines' own output goes to STORAGE/run.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ $# -ge 2 ]] || { echo "usage: $0 LANDING STORAGE [GOLD_FILE]" >&2; exit 2; }
landing=$(realpath "$1")
mkdir -p "$2" && storage=$(realpath "$2")
gold_file=${3:+$(realpath -m "$3")}
export SPARK_CONF_DIR; SPARK_CONF_DIR=$("$here/setup.sh")
venv="$HOME/.cache/reckon/sdp-venv"

# The project, with its storage set to STORAGE (the spec's fields are literal: no variables).
rm -rf "$storage/project" && mkdir -p "$storage/project"
cp -r "$here/support/transformations" "$storage/project/"
sed "s|^storage:.*|storage: file://$storage/checkpoints|" "$here/support/spark-pipeline.yml" \
  > "$storage/project/spark-pipeline.yml"

# Run from STORAGE: the warehouse (spark-warehouse/) and the Derby metastore (metastore_db/) are
# relative to the working directory. spark-pipelines needs the venv's python3 first on PATH.
cd "$storage"
start=$EPOCHREALTIME
if ! PATH="$venv/bin:$PATH" RECKON_SDP_LANDING="$landing" \
    spark-pipelines --remote 'local[2]' run --spec project/spark-pipeline.yml > run.log 2>&1; then
  grep -E 'Error|Exception' run.log | grep -v WARN | tail -5 >&2
  echo "spark-pipelines failed; see $storage/run.log" >&2
  exit 1
fi
seconds=$(awk "BEGIN { printf \"%.3f\", $EPOCHREALTIME - $start }")
exec "$venv/bin/python" "$here/spark_gold.py" "$storage" "$seconds" ${gold_file:+"$gold_file"}
