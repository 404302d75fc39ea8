#!/usr/bin/env bash
# Benchmark: `tug version --client` against kubectl 1.33's `version --client`,
# interleaved on this machine. Prints median wall time and peak memory, their
# ratios, and the binary size ratio. Goals (issue 3): <= 0.5x wall time,
# <= 0.6x peak memory, binary <= 0.6x kubectl's.
#
#   bench/version.sh [ROUNDS]        KUBECTL=/path/to/kubectl to compare with another
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
rounds=${1:-30}
kubectl=${KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}
if [ ! -x "$kubectl" ]; then
  echo "kubectl not found at $kubectl; set KUBECTL" >&2
  exit 1
fi

# The release build: static (CGO_ENABLED=0) and stripped, as .goreleaser.yaml builds it.
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/tug ./cmd/tug
measure=$(mktemp -d)/measure
trap 'rm -rf "$(dirname "$measure")"' EXIT
go build -o "$measure" ./bench/measure

# Neither command may read a kubeconfig or talk to a cluster.
export KUBECONFIG=/dev/null
"$measure" -name "tug version --client" -n "$rounds" -a "bin/tug version --client" -b "$kubectl version --client" \
  -note "kubectl $("$kubectl" version --client | sed -n 's/^Client Version: v//p'), static and stripped as both are released; peak memory is mostly the binary's own pages (code, rodata, pclntab) that start-up faults in, not heap (see bench/notes.md)"

tug_size=$(stat -c %s bin/tug)
kubectl_size=$(stat -c %s "$(readlink -f "$kubectl")")
awk -v t="$tug_size" -v k="$kubectl_size" 'BEGIN {
  r = t / k
  printf "binary bin/tug %.1f MB, kubectl %.1f MB: ratio %.2fx (goal <= 0.60x: %s)\n", t/1e6, k/1e6, r, (r <= 0.6 ? "met" : "MISSED")
}'
