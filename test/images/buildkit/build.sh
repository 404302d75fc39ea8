#!/usr/bin/env bash
# Builds (or finds in the cache) what test/images needs for the BuildKit
# image and prints the folder holding it: buildkitd and buildctl
# (github.com/moby/buildkit) and rootlesskit, built from Go modules (the
# tool directives of this module, kept apart so tug's module does not
# depend on BuildKit), and newuidmap/newgidmap from Debian's uidmap
# package (setuid helpers rootlesskit needs; the package is downloaded and
# unpacked, not installed). runc is the machine's (test/images/build -runc).
# The cache lives outside the clone, keyed on the module files and the Go
# version; a cold build takes ~4 minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
key=$( { cat "$here/go.mod" "$here/go.sum" "$here/build.sh"; go version; } | sha256sum | cut -c1-16)
out="${XDG_CACHE_HOME:-$HOME/.cache}/tug/buildkit/$key"
if [ -x "$out/buildkitd" ] && [ -x "$out/buildctl" ] && [ -x "$out/rootlesskit" ] && [ -x "$out/newuidmap" ] && [ -x "$out/newgidmap" ]; then
  echo "$out"
  exit 0
fi
[ "${1:-}" = --cached ] && exit 1
mkdir -p "$out"
echo "building BuildKit and rootlesskit (first time ~4 min; cached in $out)" >&2
start=$(date +%s)
(cd "$here" && go build -trimpath -ldflags "-s -w" -tags "osusergo netgo static_build" -o "$out/" \
  github.com/moby/buildkit/cmd/buildkitd github.com/moby/buildkit/cmd/buildctl \
  github.com/rootless-containers/rootlesskit/v2/cmd/rootlesskit)
if [ -x /usr/bin/newuidmap ] && [ -x /usr/bin/newgidmap ]; then
  cp /usr/bin/newuidmap /usr/bin/newgidmap "$out/"
else
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download uidmap >&2 && dpkg-deb -x uidmap_*.deb root)
  cp "$tmp/root/usr/bin/newuidmap" "$tmp/root/usr/bin/newgidmap" "$out/"
  rm -rf "$tmp"
fi
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$out"
