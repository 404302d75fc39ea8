#!/usr/bin/env bash
# Builds (or finds in the cache) the local cluster's router, Traefik, and
# prints the binary's path.
#
#   build-router.sh            build or find the binary; print its path
#   build-router.sh --cached   print the path only if it is already built (exit 1 if not)
#   build-router.sh --version  print the Traefik version it builds
#   build-router.sh --crds     print the folder of the Gateway API standard CRDs
#                              of the release this Traefik speaks (from the module cache)
#
# Traefik comes from Go modules through router/, its own module (so tug's
# go.mod never depends on Traefik): a tool directive for
# github.com/traefik/traefik/v3/cmd/traefik, and Traefik's own replace and
# exclude lines, which a requiring module must repeat. To move to another
# version: go get -tool github.com/traefik/traefik/v3/cmd/traefik@VERSION in
# router/, copy that version's replace and exclude lines, go mod tidy.
#
# The cache lives outside the clone, keyed on the module files, this script
# and the Go version. A cold build takes ~4-6 minutes on 2 cores; a hit takes
# milliseconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src="$here/router"
# readonly: a build never rewrites the committed module files it is keyed on
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0

# modversion MODULE: the version router/go.mod requires
modversion() { sed -n "s#^[[:space:]]*$1 \(v[^ ]*\).*#\1#p" "$src/go.mod" | head -1; }
version=$(modversion github.com/traefik/traefik/v3)
[ -n "$version" ] || { echo "router/go.mod requires no github.com/traefik/traefik/v3" >&2; exit 1; }

case "${1:-}" in
  --version) echo "$version"; exit 0 ;;
  --crds)
    gw=$(modversion sigs.k8s.io/gateway-api)
    [ -n "$gw" ] || { echo "router/go.mod requires no sigs.k8s.io/gateway-api" >&2; exit 1; }
    d=$(cd "$src" && go mod download -json "sigs.k8s.io/gateway-api@$gw" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -d "$d/config/crd/standard" ] || { echo "sigs.k8s.io/gateway-api@$gw: no config/crd/standard in the module" >&2; exit 1; }
    echo "$d/config/crd/standard"
    exit 0 ;;
esac

ldflags="-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$version"
ldflags+=" -X github.com/traefik/traefik/v3/pkg/version.BuildDate=2026-01-01T00:00:00Z"
key=$( { cat "$src/go.mod" "$src/go.sum" "$0"; go version; echo "$ldflags"; } | sha256sum | cut -c1-16)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/tug/router/$version-$key"
bin="$cache/traefik"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
[ "${1:-}" = --cached ] && exit 1
mkdir -p "$cache"
echo "building Traefik $version (first time ~5 min; cached in $cache)" >&2
start=$(date +%s)
(cd "$src" && go build -trimpath -ldflags "$ldflags" -o "$bin.tmp.$$" github.com/traefik/traefik/v3/cmd/traefik)
mv "$bin.tmp.$$" "$bin"
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$bin"
