#!/usr/bin/env bash
# Benchmark: tug's remote commands against kubectl's, on the local cluster
# (test/cluster), interleaved, in a namespace of their own:
#
#   logs   an app with UNITS web units (default 50): time from start until a
#          line from every unit is on screen, `tug logs APP -f` against
#          `kubectl logs -l ... -f --prefix --max-log-requests=UNITS`.
#          Goal (issue 6): no worse than kubectl.
#   shell  keystroke echo latency in an interactive shell under a pty,
#          `tug shell APP UNIT` against `kubectl exec -it UNIT -- sh`.
#          Goal: no worse than kubectl (ratio of medians <= 1.05: the noise of
#          this measurement; both sides run the same client-go stream code).
#
#   bench/remote.sh [UNITS] [ROUNDS]    KUBECTL=/path/to/kubectl to compare with another
#   KEEP=1 keeps the namespace afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
units=${1:-50}
rounds=${2:-5}
kubeconfig=${TUG_E2E_KUBECONFIG:-/var/lib/tug-cluster/admin.kubeconfig}
if [ ! -r "$kubeconfig" ]; then
  echo "no local cluster: $kubeconfig is missing; start one with 'make cluster-up'" >&2
  exit 1
fi

tmp=$(mktemp -d)
ns=bench-remote-$$
cleanup() {
  if [ -z "${KEEP:-}" ]; then
    KUBECONFIG=$kubeconfig "$kubectl" delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# The cluster's own kubectl (same version as the server), as the baseline.
if [ -n "${KUBECTL:-}" ]; then
  kubectl=$KUBECTL
else
  localk8s=$(test/cluster/build-localk8s.sh --cached)
  ln -s "$localk8s" "$tmp/kubectl"
  kubectl=$tmp/kubectl
fi

go build -trimpath -ldflags '-s -w' -o bin/tug ./cmd/tug
go build -o "$tmp/remote" ./bench/remote

# A kubeconfig of our own whose context works in the benchmark's namespace.
cp "$kubeconfig" "$tmp/kubeconfig"
export KUBECONFIG=$tmp/kubeconfig
"$kubectl" create namespace "$ns" >/dev/null
"$kubectl" config set-context --current --namespace "$ns" >/dev/null

echo "== setting up app 'bench' with $units web units in namespace $ns"
bin/tug app create bench >/dev/null
bin/tug env set bench HEARTBEAT=1s --no-restart >/dev/null
bin/tug app deploy bench --image localhost/tug/sample:v1 --process web=sample --timeout 5m >/dev/null 2>&1
bin/tug app scale bench "web=$units" --timeout 10m >/dev/null 2>&1
"$kubectl" wait --for=condition=Ready pod -l tug.dev/app=bench,tug.dev/process=web --timeout=10m >/dev/null
unit=$("$kubectl" get pods -l tug.dev/app=bench,tug.dev/process=web -o jsonpath='{.items[0].metadata.name}')

echo "== logs"
"$tmp/remote" logs -tug bin/tug -kubectl "$kubectl" -app bench -units "$units" -n "$rounds"
echo "== shell"
"$tmp/remote" shell -tug bin/tug -kubectl "$kubectl" -app bench -unit "$unit" -n "$rounds" -keys 100
