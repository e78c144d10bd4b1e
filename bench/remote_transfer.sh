#!/usr/bin/env bash
# Push/pull of a 16 MB range and a tiny round trip between two processes
# through CAF's middleman (plain and TLS) against iperf3's loopback TCP and a
# raw socket in the same run; prints one JSON object (bench/remote_transfer).
# Installs iperf3 (Debian package, for the baseline only) when missing.
#
#   bench/remote_transfer.sh [--build=DIR] [remote_transfer flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TROUPE_BUILD:-$root/build}
args=()
for arg in "$@"; do
  case $arg in
    --build=*) build=${arg#*=} ;;
    *) args+=("$arg") ;;
  esac
done
bin=$build/bench/remote_transfer
[ -x "$bin" ] || { echo "error: $bin is missing: build with -DTROUPE_BUILD_BENCH=ON" >&2; exit 1; }
if ! command -v iperf3 >/dev/null; then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends iperf3 >&2
fi
tls=$(mktemp -d /tmp/troupe-rt.XXXXXX)
trap 'rm -rf "$tls"' EXIT
bash "$root/tests/net/make_certs.sh" "$tls" >/dev/null 2>&1
cp "$tls/node.pem" "$tls/cert.pem"
cp "$tls/node.key" "$tls/key.pem"
"$bin" --iperf3="$(command -v iperf3)" --tls-material="$tls" "${args[@]}"
