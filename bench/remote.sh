#!/usr/bin/env bash
# Remote benchmarks alone (bench/remote: logs -f of UNITS units, shell echo)
# against the local cluster, with its own kubectl. make bench runs them too.
#
#   bench/remote.sh [UNITS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/tug ./cmd/tug
kdir=$(mktemp -d)
trap 'rm -rf "$kdir"' EXIT
ln -s "$(test/cluster/build-localk8s.sh --cached)" "$kdir/kubectl"
go run ./bench/remote -tug bin/tug -kubectl "$kdir/kubectl" -kubeconfig "$(test/cluster/cluster.sh kubeconfig)" -units "${1:-50}" -rounds "${2:-5}"
