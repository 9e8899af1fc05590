#!/usr/bin/env bash
# Installs what Reckon's build and tests need, skipping every step whose result is already there:
# Debian packages, Kafka's jars (Maven Central), the Python `deltalake` reader for the interop test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

# Debian packages: a C toolchain and zlib for rdkafka's bundled librdkafka, Java and Maven for Kafka.
missing=()
for pkg in gcc g++ make cmake pkg-config zlib1g-dev maven python3-pip; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Rust: rustup's toolchain is expected; the version is checked by Cargo (rust-version).
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo not found; install Rust with rustup" >&2; exit 1; }

# Kafka's jars, for the local broker.
"$here/kafka/fetch-jars.sh" >/dev/null

# The browser tests' chromium (skipped when there). The dashboard's build tools come with the
# site's build (scripts/build-site.sh), which runs beside the server's.
"$here/scripts/install-browser.sh"

# The Python Delta reader the interop test compares with.
python3 -c 'import deltalake, pyarrow' 2>/dev/null || python3 -m pip install -q deltalake==1.6.6 pyarrow==26.0.1
