#!/usr/bin/env bash
# Builds (or finds in the cache) the local cluster's metrics-server and
# prints the binary's path.
#
#   build-metrics.sh            build or find the binary; print its path
#   build-metrics.sh --cached   print the path only if it is already built (exit 1 if not)
#   build-metrics.sh --version  print the metrics-server version it builds
#
# metrics-server comes from Go modules through metrics/, its own module (so
# tug's go.mod never depends on it): a tool directive for
# sigs.k8s.io/metrics-server/cmd/metrics-server. To move to another version:
# go get -tool sigs.k8s.io/metrics-server/cmd/metrics-server@VERSION in
# metrics/, go mod tidy.
#
# The cache lives outside the clone, keyed on the module files, this script
# and the Go version. A cold build takes ~2-3 minutes on 2 cores; a hit takes
# milliseconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src="$here/metrics"
# readonly: a build never rewrites the committed module files it is keyed on
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0

version=$(sed -n 's#^[[:space:]]*sigs.k8s.io/metrics-server \(v[^ ]*\).*#\1#p' "$src/go.mod" | head -1)
[ -n "$version" ] || { echo "metrics/go.mod requires no sigs.k8s.io/metrics-server" >&2; exit 1; }
[ "${1:-}" = --version ] && { echo "$version"; exit 0; }

ldflags="-s -w"
key=$( { cat "$src/go.mod" "$src/go.sum" "$0"; go version; echo "$ldflags"; } | sha256sum | cut -c1-16)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/tug/metrics-server/$version-$key"
bin="$cache/metrics-server"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
[ "${1:-}" = --cached ] && exit 1
mkdir -p "$cache"
echo "building metrics-server $version (first time ~2 min; cached in $cache)" >&2
start=$(date +%s)
(cd "$src" && go build -trimpath -ldflags "$ldflags" -o "$bin.tmp.$$" sigs.k8s.io/metrics-server/cmd/metrics-server)
mv "$bin.tmp.$$" "$bin"
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$bin"
