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
  -note "kubectl $("$kubectl" version --client | sed -n 's/^Client Version: v//p'), both static and stripped as released; peak memory is mostly the binary's own pages that start-up faults in, and grows with the binary (see binary size and bench/notes.md)" \
  -size-goal 0.6 -size-note "-o go-template (text/template's Execute looks methods up by name) makes the linker keep every exported method of every API type: without it tug is ~33.5 MB and starts in ~25 MiB, both goals met (bench/notes.md)"

