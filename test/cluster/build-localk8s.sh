#!/usr/bin/env bash
# Builds (or finds in the cache) the multiplexing Kubernetes binary and prints its path.
#
#   build-localk8s.sh            build or find the binary for $K8S_VERSION; print its path
#   build-localk8s.sh --cached   print the path only if it is already built (exit 1 if not)
#   build-localk8s.sh --version  print the Kubernetes version it would build
#   build-localk8s.sh --pin      write the module files of $K8S_VERSION into
#                                localk8s/modules/ (commit them to pin a version)
#
# K8S_VERSION (default below: the newest release tug is tested against) picks
# k8s.io/kubernetes. Its module files are localk8s/modules/<version>.mod/.sum:
# require k8s.io/kubernetes <version> and replace each k8s.io staging module
# (the ones upstream's go.mod replaces with ./staging/...) with v0.<minor>.<patch>.
# A version without committed files gets them generated from upstream's go.mod
# into the cache (go mod tidy, through the module proxy).
#
# The cache lives outside the clone, keyed on the version and everything that
# changes the output: the module files, the source, the Go version and the
# flags. A cold build takes ~13 minutes on 2 cores; a hit takes milliseconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src="$here/localk8s"
default_version=v1.37.2
k8s_version=${K8S_VERSION:-$default_version}
[[ $k8s_version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] ||
  { echo "K8S_VERSION must be a release like $default_version, not '$k8s_version'" >&2; exit 2; }
minor=${BASH_REMATCH[1]}
staging_version=v0.$minor.${BASH_REMATCH[2]}
[ "${1:-}" = --version ] && { echo "$k8s_version"; exit 0; }

# readonly: a build never rewrites the committed module files it is keyed on
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"
root="${XDG_CACHE_HOME:-$HOME/.cache}/tug/localk8s"

# generate DIR: write DIR/<version>.mod and .sum for $k8s_version.
generate() {
  local out=$1 tmp upstream mods m
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  upstream=$(go mod download -json "k8s.io/kubernetes@$k8s_version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [ -f "$upstream" ] || { echo "k8s.io/kubernetes@$k8s_version: no go.mod from the module proxy" >&2; return 1; }
  mods=$(sed -n 's#^[[:space:]]*\(k8s.io/[A-Za-z0-9._-]*\) => ./staging/.*#\1#p' "$upstream")
  [ -n "$mods" ] || { echo "k8s.io/kubernetes@$k8s_version: no staging replacements in its go.mod" >&2; return 1; }
  cp "$src/main.go" "$tmp/"
  printf 'module tug.dev/localk8s\n\ngo 1.24.0\n' > "$tmp/go.mod"
  local args=(-require="k8s.io/kubernetes@$k8s_version")
  for m in $mods; do args+=(-replace="$m=$m@$staging_version"); done
  (cd "$tmp" && export GOFLAGS=-mod=mod && go mod edit "${args[@]}" && go mod tidy) >&2
  mkdir -p "$out"
  cp "$tmp/go.mod" "$out/$k8s_version.mod"
  cp "$tmp/go.sum" "$out/$k8s_version.sum"
  echo "wrote $out/$k8s_version.mod and .sum ($(wc -w <<<"$mods") staging modules at $staging_version)" >&2
}

if [ "${1:-}" = --pin ]; then
  generate "$src/modules"
  exit 0
fi

modfile="$src/modules/$k8s_version.mod"
if [ ! -f "$modfile" ]; then
  modfile="$root/modules/$k8s_version.mod"
  if [ ! -f "$modfile" ]; then
    [ "${1:-}" = --cached ] && exit 1
    echo "no module files for Kubernetes $k8s_version in $src/modules: generating them in $root/modules" >&2
    generate "$root/modules"
  fi
fi
sumfile="${modfile%.mod}.sum"

ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitCommit=0000000000000000000000000000000000000000 -X $pkg.gitTreeState=clean"
  ldflags+=" -X $pkg.buildDate=2026-01-01T00:00:00Z"
done
key=$( { cat "$modfile" "$sumfile" "$src"/*.go; go version; echo "$ldflags"; } | sha256sum | cut -c1-16)
cache="$root/$k8s_version-$key"
bin="$cache/localk8s"
# Before the version was a variable the folder was named by the key alone (the
# same inputs, so the same binary): link it rather than build it again.
if [ ! -x "$bin" ] && [ -x "$root/$key/localk8s" ]; then
  mkdir -p "$cache"
  ln "$root/$key/localk8s" "$bin" 2>/dev/null || cp "$root/$key/localk8s" "$bin"
fi
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
# --cached: only report a binary that is already built
[ "${1:-}" = --cached ] && exit 1
mkdir -p "$cache"
echo "building Kubernetes $k8s_version components (first time ~13 min; cached in $cache)" >&2
start=$(date +%s)
# -modfile: one source folder, module files per Kubernetes version. The go.mod
# next to main.go only marks the module root (go requires one); it is not read.
(cd "$src" && go build -modfile "$modfile" -trimpath -ldflags "$ldflags" -o "$bin.tmp" .)
mv "$bin.tmp" "$bin"
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$bin"
