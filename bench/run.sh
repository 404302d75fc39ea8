#!/usr/bin/env bash
# make bench: every benchmark against the local cluster, tug and kubectl side
# by side, then docs/benchmarks.md rewritten from the rows they wrote.
# Starts the local cluster when none runs (two nodes, as make test does) and
# stops it afterwards only if it started it.
#
#   BENCH_BEFORE=REV   also measures node list with tug built at REV, for a fix's
#                      before/after (BENCH_BEFORE_ROWS=unit,node,many: the rows to
#                      measure again: unit list, node list, the many-unit deploy)
#   BENCH_QUICK=1      small scales (a smoke run; do not commit its file)
#   ONLY=route,cnb     run only these sections (names: the first word of each
#                      "section" line below) and update only their rows; the
#                      other rows stay as the last run that measured them left
#                      them, with that run's date and commit (docs/benchmarks.jsonl)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
known=startup,deploy,source,promote,cnb,apps,scale,many,remote,route,bluegreen,latency,usage,services
ONLY=${ONLY:-}
for n in ${ONLY//,/ }; do
  [[ ",$known," == *",$n,"* ]] || { echo "ONLY: no section $n (sections: $known)" >&2; exit 2; }
done
cluster=test/cluster/cluster.sh
started=
if ! $cluster status >/dev/null 2>&1; then
  $cluster up "${BENCH_NODES:-2}"
  started=1
fi
tmp=$(mktemp -d)
began=$(date +%s)
finish() {
  local code=$?
  # Each benchmark deletes its namespace and fake nodes however it ends;
  # this catches what one killed outright (SIGKILL) left behind.
  if [ -e "$tmp/kubectl" ]; then
    "$tmp/kubectl" --kubeconfig "$kubeconfig" delete namespace -l tug.dev/bench=1 --wait=false >/dev/null 2>&1 || true
    "$tmp/kubectl" --kubeconfig "$kubeconfig" delete nodes -l tug.dev/bench-fake-node >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
  if [ -n "$started" ] && [ -z "${KEEP_CLUSTER:-}" ]; then
    $cluster down || code=1
  fi
  exit $code
}
trap finish EXIT

built=$(git describe --always --dirty)
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/tug ./cmd/tug
kubeconfig=$($cluster kubeconfig)
ln -s "$(test/cluster/build-localk8s.sh --cached)" "$tmp/kubectl"
export TUG_E2E_KUBECONFIG=$kubeconfig
common=(-tug bin/tug -kubectl "$tmp/kubectl" -kubeconfig "$kubeconfig")
before=()
if [ -n "${BENCH_BEFORE:-}" ]; then
  mkdir "$tmp/before"
  git archive "$BENCH_BEFORE" | tar -x -C "$tmp/before"
  (cd "$tmp/before" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$tmp/tug-before" ./cmd/tug)
  before=(-tug-before "$tmp/tug-before" -before "$(git rev-parse --short "$BENCH_BEFORE")" -before-rows "${BENCH_BEFORE_ROWS:-node}")
fi
scale=(-again=false); apps=(); many=(); remote=(-units 50 -rounds 3); services=(-rounds 3 -rotate-rounds 3); quick=()
if [ -n "${BENCH_QUICK:-}" ]; then
  scale=(-pods 1000 -nodes 100 -rounds 1); apps=(-apps 60 -rounds 1); many=(-units 20); remote=(-units 10 -rounds 1); services=(-rounds 1 -rotate-rounds 1)
  quick=(-quick)
fi

# section NAME TITLE COMMAND...: runs one benchmark unless ONLY leaves it
# out; its rows go to their own file, and its wall time is recorded.
ran=()
section() {
  local name=$1 title=$2; shift 2
  if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then return 0; fi
  echo "== $title"
  local t0; t0=$(date +%s)
  if [[ $1 == "$tmp"/* ]]; then go build -o "$1" "./bench/${1#"$tmp"/}"; fi
  TUG_BENCH_OUT=$tmp/rows-$name.jsonl "$@"
  echo "$name $(( $(date +%s) - t0 ))" >>"$tmp/took.txt"
  ran+=("$name")
}

section startup   "start-up"              bench/version.sh 15
section deploy    "deploy"                "$tmp/deploy" "${common[@]}" -rounds 7
section source    "deploy from source"    "$tmp/source" "${common[@]}" -registry "$($cluster registry)"
section promote   "promote"               "$tmp/promote" "${common[@]}" -registry "$($cluster registry)"
section cnb       "CNB build"             "$tmp/cnb" "${common[@]}" -registry "$($cluster registry)"
section apps      "app list"              "$tmp/apps" "${common[@]}" "${apps[@]}"
section scale     "unit and node list"    "$tmp/scale" "${common[@]}" "${before[@]}" "${scale[@]}"
section many      "many units"            "$tmp/many" "${common[@]}" "${before[@]}" "${many[@]}"
section remote    "logs and shell"        "$tmp/remote" "${common[@]}" "${remote[@]}"
section route     "routes"                "$tmp/route" "${common[@]}" -router "$($cluster router)"
section bluegreen "blue-green rollback"   "$tmp/bluegreen" "${common[@]}" -router "$($cluster router)"
section latency   "request latency"       "$tmp/latency" "${common[@]}" -router "$($cluster router)"
section usage     "metrics"               "$tmp/usage" "${common[@]}"
section services  "backing services"      "$tmp/services" "${common[@]}" -router "$($cluster router)" \
  -dbapp "$($cluster service-images | awk '$1 == "dbapp" {print $2}')" "${services[@]}"

took=$(( $(date +%s) - began ))
sections=$(IFS=,; echo "${ran[*]}")
go run ./bench/report -dir "$tmp" -sections "$sections" -order "$known" -doc docs/benchmarks.md -data docs/benchmarks.jsonl -k8s "$(test/cluster/build-localk8s.sh --version)" -commit "$built" \
  -took "$((took / 60)) min $((took % 60)) s" "${quick[@]}"
echo "wrote docs/benchmarks.md (make bench took $((took / 60))m$((took % 60))s)"
