#!/usr/bin/env bash
# The README's test command: unit tests, then the end-to-end tests against the
# local cluster. Starts the cluster when none is running (two nodes, so node
# drains have somewhere to go) and stops it afterwards only if it started it.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
cluster=test/cluster/cluster.sh
started=
if ! $cluster status >/dev/null 2>&1; then
  $cluster up "${TEST_NODES:-2}"
  started=1
else
  # A running cluster (make demo's, or one started with NODES=1) is brought
  # to what the tests need: enough nodes (it restarts with more), and the
  # registry, images and router of this checkout.
  $cluster up "${TEST_NODES:-2}"
fi
finish() {
  local code=$?
  if [ -n "$started" ] && [ -z "${KEEP_CLUSTER:-}" ]; then
    $cluster down || code=1
    $cluster check-clean || code=1
  fi
  exit $code
}
trap finish EXIT
export TUG_E2E_KUBECONFIG=$($cluster kubeconfig) TUG_E2E_REQUIRED=1
# dbapp (the backing-services sample app) is its own module: ./... skips it
(cd test/images/dbapp && go test -count=1 ./...)
# The log reads as plain `go test` (a line a package, the whole output of a
# failed test), then the slowest tests; every event is kept in
# TEST_EVENTS (default: a file in the system's temporary folder).
report=$(mktemp -d)/testreport
go build -o "$report" ./hack/testreport
events=${TEST_EVENTS:-${TMPDIR:-/tmp}/tug-test-events.jsonl}
go test -count=1 -timeout 45m -json ./... "$@" | "$report" -slowest 25 -events "$events"
echo "every test event: $events"
