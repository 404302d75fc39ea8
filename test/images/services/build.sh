#!/usr/bin/env bash
# Builds (or finds in the cache) the local cluster's backing-service images
# and prints the folder holding them:
#   postgres.tar  localhost/tug/postgres:15  PostgreSQL 15 from Debian bookworm
#   redis.tar     localhost/tug/redis:7      Redis 7 from Debian's redis-server
# Each is a root filesystem made offline with debootstrap (--variant=minbase)
# from the Debian mirror apt already uses on this machine, trimmed (apt
# lists and caches, docs, man pages, translations; for postgres the LLVM JIT,
# with jit=off), its service user moved to uid/gid 999, and packed by
# test/images/pack as an OCI image-layout tar that cluster.sh imports into
# every node and pushes to the local registry (docs/services.md).
#
#   build.sh            build unless cached; print the folder
#   build.sh --cached   print the folder when cached, else exit 1
#   build.sh --key      print the cache key
#
# The cache lives outside the clone, keyed on this script, the entrypoints,
# the packer and the Go version; a cold build takes ~2 minutes (two
# debootstraps side by side). Needs root (debootstrap, file owners).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
export GOTOOLCHAIN=local
suite=bookworm
key=$( { cat "$here/build.sh" "$here/postgres-entrypoint.sh" "$here/redis-entrypoint.sh" \
  "$repo"/test/images/layer/*.go "$repo"/test/images/pack/*.go; echo "$suite"; go version; } | sha256sum | cut -c1-16)
out="${XDG_CACHE_HOME:-$HOME/.cache}/tug/images/services/$key"
say() { printf 'service images: %s\n' "$*" >&2; }

case "${1:-}" in
  --key) echo "$key"; exit 0 ;;
  --cached | '') ;;
  *) echo "usage: $0 [--cached|--key]" >&2; exit 2 ;;
esac
if [ -f "$out/postgres.tar" ] && [ -f "$out/redis.tar" ]; then
  echo "$out"
  exit 0
fi
[ "${1:-}" = --cached ] && exit 1
[ "$(id -u)" -eq 0 ] || { say "building needs root (debootstrap)"; exit 1; }

# mirror: the Debian archive apt uses here for $suite's main component
mirror() {
  local m
  m=$(apt-get indextargets --format '$(SITE) $(CODENAME) $(COMPONENT)' 'Identifier: Packages' 2>/dev/null |
    awk -v s="$suite" '$2 == s && $3 == "main" {print $1; exit}')
  echo "${m:-http://deb.debian.org/debian}"
}

# remap_user ROOTFS NAME: NAME's user and group become 999:999, and so do
# the files they owned (Debian gives system users the next free id).
remap_user() {
  local root=$1 name=$2 uid gid
  uid=$(awk -F: -v n="$name" '$1 == n {print $3}' "$root/etc/passwd")
  gid=$(awk -F: -v n="$name" '$1 == n {print $4}' "$root/etc/passwd")
  [ -n "$uid" ] && [ -n "$gid" ] || { say "no user $name in $root"; return 1; }
  if awk -F: -v n="$name" '$3 == 999 && $1 != n {f=1} END {exit !f}' "$root/etc/passwd" "$root/etc/group"; then
    say "uid or gid 999 is taken in $root"
    return 1
  fi
  find "$root" -xdev -uid "$uid" -exec chown -h 999 {} +
  find "$root" -xdev -gid "$gid" -exec chgrp -h 999 {} +
  sed -i "s/^$name:x:$uid:$gid:/$name:x:999:999:/" "$root/etc/passwd"
  sed -i "s/^$name:x:$gid:/$name:x:999:/" "$root/etc/group"
}

# trim ROOTFS: what no container needs.
trim() {
  local root=$1
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
    "$root"/var/lib/dpkg/*-old "$root"/var/log/* "$root"/usr/share/doc "$root"/usr/share/man \
    "$root"/usr/share/info "$root"/usr/share/locale "$root"/usr/share/lintian
}

# mounts_under DIR: what is mounted below DIR (debootstrap mounts proc and
# sys, and may bind /dev, while it works), deepest first.
mounts_under() { awk -v d="$1/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r; }

# cleanup: nothing of the work folder stays, and nothing mounted in it is
# touched (a /dev bound in a root filesystem is the machine's).
cleanup() {
  local m
  for m in $(mounts_under "$work"); do umount -l "$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$work"
}

# debootstrap_into ROOTFS PACKAGE LOG
debootstrap_into() {
  debootstrap --variant=minbase --include="$2" "$suite" "$1" "$(mirror)" >"$3" 2>&1 ||
    { say "debootstrap of $2 failed:"; tail -n 20 "$3" | sed 's/^/  | /' >&2; return 1; }
  [ -z "$(mounts_under "$1")" ] || { say "debootstrap left mounts in $1: $(mounts_under "$1" | tr '\n' ' ')"; return 1; }
}

postgres_rootfs() {
  local root=$1 conf
  debootstrap_into "$root" postgresql-15 "$2"
  remap_user "$root" postgres
  # the JIT (jit=off below) and the libraries only it loads
  rm -rf "$root"/usr/lib/postgresql/15/lib/llvmjit* "$root"/usr/lib/postgresql/15/lib/bitcode \
    "$root"/usr/lib/x86_64-linux-gnu/libLLVM* "$root"/usr/lib/x86_64-linux-gnu/libz3.so*
  # the cluster the package made at install, and the snakeoil key
  rm -rf "$root"/var/lib/postgresql/15 "$root"/etc/postgresql/15/main \
    "$root"/etc/ssl/private/ssl-cert-snakeoil.key "$root"/etc/ssl/certs/ssl-cert-snakeoil.pem
  # initdb copies the sample into every new PGDATA
  conf=$root/usr/share/postgresql/15/postgresql.conf.sample
  [ -f "$conf" ] || { say "no $conf"; return 1; }
  printf '\n# tug local image\nlisten_addresses = '"'*'"'\njit = off\nshared_buffers = 32MB\n' >> "$conf"
  install -d -o 999 -g 999 -m 0755 "$root/var/lib/postgresql/data"
  install -d -o 999 -g 999 -m 2775 "$root/run/postgresql"
  install -d -m 0755 "$root/docker-entrypoint-initdb.d"
  install -m 0755 "$here/postgres-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"
  trim "$root"
}

redis_rootfs() {
  local root=$1
  debootstrap_into "$root" redis-server "$2"
  remap_user "$root" redis
  install -d -o 999 -g 999 -m 0755 "$root/data"
  install -m 0755 "$here/redis-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"
  trim "$root"
}

# version ROOTFS PACKAGE: the installed version of PACKAGE
version() { chroot "$1" dpkg-query -W -f '${Version}' "$2"; }

start=$(date +%s)
command -v debootstrap >/dev/null || {
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
}
mkdir -p "$(dirname "$out")"
work=$(mktemp -d "$(dirname "$out")/.build-XXXXXX")
trap cleanup EXIT
say "building postgres and redis from Debian $suite (first time ~2 min; cached in $out)"
postgres_rootfs "$work/postgres" "$work/postgres.log" &
pg=$!
redis_rootfs "$work/redis" "$work/redis.log" || exit 1
wait "$pg" || exit 1
pgv=$(version "$work/postgres" postgresql-15)
rv=$(version "$work/redis" redis-server)
mkdir -p "$work/out"
base=(-label "org.opencontainers.image.source=tug test/images/services" -label "org.opencontainers.image.base.name=debian:$suite")
(cd "$repo" && go run ./test/images/pack -rootfs "$work/postgres" -out "$work/out/postgres.tar" -ref localhost/tug/postgres:15 \
  -user 999:999 -stop-signal SIGINT -entrypoint docker-entrypoint.sh -cmd postgres \
  -env PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  -env PGDATA=/var/lib/postgresql/data/pgdata -env LANG=C.UTF-8 \
  "${base[@]}" -label "org.opencontainers.image.version=$pgv") &
pack=$!
(cd "$repo" && go run ./test/images/pack -rootfs "$work/redis" -out "$work/out/redis.tar" -ref localhost/tug/redis:7 \
  -user 999:999 -workdir /data -entrypoint docker-entrypoint.sh -cmd redis-server \
  -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  "${base[@]}" -label "org.opencontainers.image.version=$rv")
wait "$pack"
printf 'postgresql-15 %s\nredis-server %s\n' "$pgv" "$rv" > "$work/out/versions"
rm -rf "$out"
mv "$work/out" "$out"
say "built in $(( $(date +%s) - start ))s: postgres $pgv $(du -h "$out/postgres.tar" | cut -f1), redis $rv $(du -h "$out/redis.tar" | cut -f1)"
echo "$out"
