#!/usr/bin/env bash
# Puts Apache Kafka's jars (from Maven Central) where `reckon broker start` looks for them.
# Idempotent: does nothing when the folder is already complete.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")
dest=${RECKON_KAFKA_LIBS:-$HOME/.cache/reckon/kafka-$version/libs}
if [ -f "$dest/.complete" ]; then
  echo "$dest"
  exit 0
fi
mkdir -p "$dest"
mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
  -DoutputDirectory="$dest" -DincludeScope=runtime >&2
touch "$dest/.complete"
echo "$dest"
