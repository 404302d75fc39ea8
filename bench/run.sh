#!/usr/bin/env bash
# make bench: every benchmark against the local cluster, tug and kubectl side
# by side, then docs/benchmarks.md rewritten from the rows they wrote.
# Starts the local cluster when none runs (two nodes, as make test does) and
# stops it afterwards only if it started it.
#
#   BENCH_BEFORE=REV   also measures the listing benchmarks with tug built at REV
#   BENCH_QUICK=1      small scales (a smoke run; do not commit its file)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
cluster=test/cluster/cluster.sh
started=
if ! $cluster status >/dev/null 2>&1; then
  $cluster up "${BENCH_NODES:-2}"
  started=1
fi
tmp=$(mktemp -d)
finish() {
  local code=$?
  rm -rf "$tmp"
  if [ -n "$started" ] && [ -z "${KEEP_CLUSTER:-}" ]; then
    $cluster down || code=1
  fi
  exit $code
}
trap finish EXIT

go build -trimpath -ldflags '-s -w' -o bin/tug ./cmd/tug
ln -s "$(test/cluster/build-localk8s.sh --cached)" "$tmp/kubectl"
kubeconfig=$($cluster kubeconfig)
export TUG_BENCH_OUT=$tmp/rows.jsonl TUG_E2E_KUBECONFIG=$kubeconfig
common=(-tug bin/tug -kubectl "$tmp/kubectl" -kubeconfig "$kubeconfig")
before=()
if [ -n "${BENCH_BEFORE:-}" ]; then
  mkdir "$tmp/before"
  git archive "$BENCH_BEFORE" | tar -x -C "$tmp/before"
  (cd "$tmp/before" && go build -trimpath -ldflags '-s -w' -o "$tmp/tug-before" ./cmd/tug)
  before=(-tug-before "$tmp/tug-before")
fi
scale=(); apps=(); many=()
if [ -n "${BENCH_QUICK:-}" ]; then
  scale=(-pods 1000 -nodes 100 -rounds 1); apps=(-apps 60 -rounds 1); many=(-units 20)
fi
for b in deploy source apps scale many; do go build -o "$tmp/$b" "./bench/$b"; done

echo "== start-up";            bench/version.sh 15
echo "== deploy";              "$tmp/deploy" "${common[@]}" -rounds 5
echo "== deploy from source";  "$tmp/source" "${common[@]}" -registry "$($cluster registry)"
echo "== app list";            "$tmp/apps" "${common[@]}" "${apps[@]}"
echo "== unit and node list";  "$tmp/scale" "${common[@]}" "${before[@]}" "${scale[@]}"
echo "== many units";          "$tmp/many" "${common[@]}" "${many[@]}"
echo "== logs (50 units) and shell"
KUBECTL=$tmp/kubectl bench/remote.sh 50 5

go run ./bench/report -rows "$tmp/rows.jsonl" -doc docs/benchmarks.md -k8s "$(test/cluster/build-localk8s.sh --version)"
echo "wrote docs/benchmarks.md"
