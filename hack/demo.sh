#!/usr/bin/env bash
# make demo: bring up the local cluster (when none runs) and show tug's main
# job on it. It grows with every feature.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
test/cluster/cluster.sh up "${NODES:-1}"
make -s build
export KUBECONFIG=$(test/cluster/cluster.sh kubeconfig)
tug=bin/tug
step() { printf '\n\033[1m$ tug %s\033[0m\n' "$*"; }

step version
$tug version
step doctor
$tug doctor || true
printf '\nThe cluster keeps running: KUBECONFIG=%s; stop it with make cluster-down\n' "$KUBECONFIG"
