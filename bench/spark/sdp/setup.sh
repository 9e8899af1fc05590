#!/usr/bin/env bash
# Installs what the Spark Declarative Pipelines peer needs, under ~/.cache/reckon; idempotent (a
# second run only checks). Prints the SPARK_CONF_DIR to export: run.sh does that by itself.
#   sdp-venv   pyspark[connect] 4.2.0 (spark-pipelines), duckdb
#   sdp-jars   Delta 4.4.0 for Spark 4.2, by mvn (Ivy's spark.jars.packages fails on transitive
#              downloads here)
#   sdp-conf   spark-defaults.conf: the static settings, which the yml cannot set
#              (CANNOT_MODIFY_STATIC_CONFIG), and a Hive catalog so tables outlive a run (README.md)
set -euo pipefail
cache="$HOME/.cache/reckon"
venv="$cache/sdp-venv" jars="$cache/sdp-jars" conf="$cache/sdp-conf"
DELTA=4.4.0
PIP_PKGS=("pyspark[connect]==4.2.0" "pyyaml" "zstandard" "pandas<3" "duckdb==2.0.1")
JAR_COORDS=("io.delta:delta-spark_4.2_2.13:$DELTA" "io.delta:delta-storage:$DELTA")

stamp="$venv/.reckon-installed"
want="${PIP_PKGS[*]}"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  [[ -x "$venv/bin/python3" ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${PIP_PKGS[@]}"
  echo "$want" > "$stamp"
fi

mkdir -p "$jars"
for coord in "${JAR_COORDS[@]}"; do
  IFS=: read -r _ artifact version <<< "$coord"
  [[ -f "$jars/$artifact-$version.jar" ]] ||
    mvn -B -q dependency:copy -Dartifact="$coord" -DoutputDirectory="$jars" -Dmdep.useBaseVersion=true >&2
done

mkdir -p "$conf"
cat > "$conf/spark-defaults.conf.new" <<CONF
spark.driver.memory                 4g
spark.jars                          $jars/delta-spark_4.2_2.13-$DELTA.jar,$jars/delta-storage-$DELTA.jar
spark.sql.extensions                io.delta.sql.DeltaSparkSessionExtension
spark.sql.catalog.spark_catalog     org.apache.spark.sql.delta.catalog.DeltaCatalog
spark.sql.sources.default           delta
spark.sql.catalogImplementation     hive
spark.sql.session.timeZone          UTC
spark.sql.shuffle.partitions        2
spark.ui.enabled                    false
spark.ui.showConsoleProgress        false
CONF
if cmp -s "$conf/spark-defaults.conf.new" "$conf/spark-defaults.conf"; then
  rm "$conf/spark-defaults.conf.new"
else
  mv "$conf/spark-defaults.conf.new" "$conf/spark-defaults.conf"
fi
echo "$conf"
