#!/usr/bin/env bash
# Runs each fuzz target of tug's input parsers for a short while
# (FUZZTIME, default 5s), one after the other, starting from the committed
# seed corpus (f.Add and testdata/fuzz/). A failure leaves its input in the
# package's testdata/fuzz/NAME/ directory: commit it with the fix, and it
# stays a regression test that plain 'go test' runs.
#   hack/fuzz.sh                 every target
#   hack/fuzz.sh FuzzParseCIDR   only the ones named
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
fuzztime=${FUZZTIME:-5s}
targets=(
  ./pkg/app:FuzzParseProcfile
  ./pkg/app:FuzzParseEnvFile
  ./pkg/app:FuzzParseEnvArgs
  ./pkg/app:FuzzParseScale
  ./pkg/app:FuzzLimits
  ./pkg/app:FuzzParseProbe
  ./pkg/app:FuzzAutoscaleCPU
  ./pkg/app:FuzzParseTags
  ./pkg/traffic:FuzzParseCIDR
  ./pkg/traffic:FuzzDomain
  ./pkg/volume:FuzzValidateMountPath
  ./pkg/text:FuzzWriter
)
start=$(date +%s)
for t in "${targets[@]}"; do
  pkg=${t%%:*} name=${t##*:}
  if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
  echo "== $name ($pkg, $fuzztime)"
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel "${FUZZ_WORKERS:-2}" "$pkg"
done
echo "== fuzzing done in $(( $(date +%s) - start ))s"
