#!/usr/bin/env bash
# Deploy benchmark: tug vs kubectl rollout status on the local cluster.
# Needs a running local cluster (make cluster-up).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
make -s build
k8s=$(test/cluster/build-localk8s.sh --cached)
kdir=$(mktemp -d)
ln -s "$k8s" "$kdir/kubectl"
go run ./bench/deploy -tug bin/tug -kubectl "$kdir/kubectl" -kubeconfig "$(test/cluster/cluster.sh kubeconfig)" "$@"
rm -rf "$kdir"
