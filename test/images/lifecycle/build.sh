#!/usr/bin/env bash
# Builds (or finds in the cache) the Cloud Native Buildpacks lifecycle for
# the local cluster's CNB test builder (test/images: tug/cnb-builder) and
# prints the folder holding `lifecycle` and `launcher`. They come from the
# Go module github.com/buildpacks/lifecycle (the tool directives of this
# module, kept apart so tug's module does not depend on it) at the version
# go.mod requires: the proxy serves v0.21.0 (Platform API 0.7-0.15,
# Buildpack API 0.7-0.12) but refuses the version list, so move by naming a
# version: go get -tool github.com/buildpacks/lifecycle/cmd/lifecycle@VERSION.
# The cache lives outside the clone, keyed on the module files, this script
# and the Go version; a cold build takes ~3 minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
version=$(sed -n 's#^[[:space:]]*github.com/buildpacks/lifecycle \(v[^ ]*\).*#\1#p' "$here/go.mod" | head -1)
[ -n "$version" ] || { echo "lifecycle/go.mod requires no github.com/buildpacks/lifecycle" >&2; exit 1; }
[ "${1:-}" = --version ] && { echo "$version"; exit 0; }
key=$( { cat "$here/go.mod" "$here/go.sum" "$here/build.sh"; go version; } | sha256sum | cut -c1-16)
out="${XDG_CACHE_HOME:-$HOME/.cache}/tug/lifecycle/$version-$key"
if [ -x "$out/lifecycle" ] && [ -x "$out/launcher" ]; then
  echo "$out"
  exit 0
fi
[ "${1:-}" = --cached ] && exit 1
mkdir -p "$out"
echo "building the CNB lifecycle $version (first time ~3 min; cached in $out)" >&2
start=$(date +%s)
ldflags="-s -w -X github.com/buildpacks/lifecycle/cmd.Version=${version#v} -X github.com/buildpacks/lifecycle/cmd.SCMRepository=github.com/buildpacks/lifecycle"
(cd "$here" && go build -trimpath -ldflags "$ldflags" -o "$out/tmp.$$/" \
  github.com/buildpacks/lifecycle/cmd/lifecycle github.com/buildpacks/lifecycle/cmd/launcher)
mv "$out/tmp.$$/lifecycle" "$out/tmp.$$/launcher" "$out/"
rmdir "$out/tmp.$$"
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$out"
