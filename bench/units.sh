#!/usr/bin/env bash
# unit list benchmark: tug vs kubectl get pods -l, with many units, on the
# local cluster (make cluster-up).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
make -s build
kdir=$(mktemp -d)
ln -s "$(test/cluster/build-localk8s.sh --cached)" "$kdir/kubectl"
trap 'rm -rf "$kdir"' EXIT
go run ./bench/units -tug bin/tug -kubectl "$kdir/kubectl" -kubeconfig "$(test/cluster/cluster.sh kubeconfig)" "$@"
