#!/usr/bin/env bash
# make demo: bring up the local cluster (when none runs) and show tug's main
# job on it: create an app, deploy, scale, configure, fail safely, roll back.
# It grows with every feature.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
test/cluster/cluster.sh up "${NODES:-1}"
make -s build
export PATH=$PWD/bin:$PATH
ns=tug-demo
k8s=$(test/cluster/build-localk8s.sh --cached)
# a copy of the admin kubeconfig whose context points at the demo namespace
export KUBECONFIG=/tmp/tug-demo.kubeconfig
cp "$(test/cluster/cluster.sh kubeconfig)" "$KUBECONFIG"
"$k8s" kubectl delete namespace "$ns" --ignore-not-found --wait >/dev/null
"$k8s" kubectl create namespace "$ns" >/dev/null
"$k8s" kubectl config set-context --current --namespace "$ns" >/dev/null

step() { printf '\n\033[1m$ tug %s\033[0m\n' "$*"; tug "$@"; }
expect_fail() { printf '\n\033[1m$ tug %s\033[0m   (fails on purpose)\n' "$*"; tug "$@" || echo "(exit code $?)"; }

step version
step doctor || true
step app create shop --description "the demo shop"
step app deploy shop --image localhost/tug/sample:v1 --process web=sample --process worker='sample worker' -m "first deploy"
step app scale shop web=3
step unit list shop
step env set shop GREETING=hello
step env get shop
step app deploy shop --image localhost/tug/sample:v2 --process web=sample --process worker='sample worker' --dry-run
step app deploy shop --image localhost/tug/sample:v2 --process web=sample --process worker='sample worker'
expect_fail app deploy shop --image localhost/tug/sample:crash --process web=sample --process worker='sample worker'
expect_fail app deploy shop --image localhost/tug/no-such-image:1
step release list shop
step release rollback shop
step app info shop
step app limit set shop -p web --memory 64Mi --cpu 250m
step app stop shop -p worker
step app info shop
printf '\nThe cluster keeps running: export KUBECONFIG=%s (namespace %s); stop it with make cluster-down\n' "$KUBECONFIG" "$ns"
