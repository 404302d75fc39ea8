#!/usr/bin/env bash
# Checks build.sh's failure paths in seconds, with a fake debootstrap and a
# fake chroot on PATH (no Debian archive, no real root filesystem) and a
# throw-away cache: a failed step exits non-zero and caches nothing, a
# killed build leaves no job, mount or work folder, a stale work folder is
# removed, and a second build waits for the first's lock. The success case
# runs too, so the fakes are known to reach the packing step. Needs root.
#
#   test/images/services/build-test.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "build-test: needs root (mounts)" >&2; exit 1; }
tmp=$(mktemp -d)
fail=0
finish() {
  local m
  for m in $(awk -v d="$tmp/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do umount -l "$m"; done
  rm -rf --one-file-system "$tmp"
}
trap finish EXIT
mkdir -p "$tmp/bin"
# debootstrap --variant=minbase --include=PKG SUITE TARGET MIRROR
cat >"$tmp/bin/debootstrap" <<'EOF'
#!/bin/sh
set -e
pkg=${2#--include=} target=$4
mkdir -p "$target/etc" "$target/usr/local/bin" "$target/usr/share/postgresql/15" "$target/proc"
touch "$target/usr/share/postgresql/15/postgresql.conf.sample"
user=${pkg%%-*}
[ "$user" = postgresql ] && user=postgres
echo "root:x:0:0:root:/root:/bin/sh" >"$target/etc/passwd"
echo "root:x:0:" >"$target/etc/group"
if [ "${FAKE_FAIL:-}" != "no-user-$user" ]; then
  echo "$user:x:105:107::/var/lib/$user:/bin/sh" >>"$target/etc/passwd"
  echo "$user:x:107:" >>"$target/etc/group"
fi
case "${FAKE_FAIL:-}" in
  "mount-left-$user") mount -t tmpfs fake "$target/proc" ;;
  slow) sleep 3017 ;;
esac
EOF
# chroot ROOT dpkg-query -W -f FORMAT PACKAGE
cat >"$tmp/bin/chroot" <<'EOF'
#!/bin/sh
echo "${FAKE_STATUS:-installed} 1.0-fake"
EOF
chmod +x "$tmp/bin/debootstrap" "$tmp/bin/chroot"
export PATH="$tmp/bin:$PATH" XDG_CACHE_HOME="$tmp/cache"
cachedir=$tmp/cache/tug/images/services
key=$("$here/build.sh" --key)

check() { # NAME CONDITION...: report one expectation
  local name=$1
  shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name" >&2; fail=1; fi
}
nothing_left() { # no cached image, no work folder, no mount under the cache
  [ ! -e "$cachedir/$key" ] && [ -z "$(ls -d "$cachedir"/.build-* 2>/dev/null)" ] &&
    ! awk -v d="$tmp/cache/" 'index($5, d) == 1 {f=1} END {exit !f}' /proc/self/mountinfo
}
run() { # FAKE_FAIL FAKE_STATUS: build.sh's exit code
  local rc=0
  rm -rf "$cachedir/$key" # each case on its own, even after a failed one
  FAKE_FAIL=$1 FAKE_STATUS=$2 "$here/build.sh" >"$tmp/out" 2>"$tmp/err" || rc=$?
  echo "$rc"
}

for f in no-user-redis no-user-postgres mount-left-redis mount-left-postgres; do
  rc=$(run "$f" installed)
  check "$f: exits non-zero ($rc)" [ "$rc" -ne 0 ]
  check "$f: caches nothing, leaves nothing" nothing_left
done
rc=$(run "" half-installed)
check "a package dpkg calls half-installed: exits non-zero ($rc)" [ "$rc" -ne 0 ]
check "half-installed: names it" grep -q 'not installed.*half-installed' "$tmp/err"
check "half-installed: caches nothing, leaves nothing" nothing_left

# killed while debootstrap runs: its jobs stop and their tree goes
FAKE_FAIL=slow "$here/build.sh" >/dev/null 2>"$tmp/err" &
b=$!
# the pattern's [7] keeps pgrep from matching a shell that runs it
for _ in $(seq 100); do pgrep -f 'sleep 301[7]' >/dev/null && break; sleep 0.1; done
running() { pgrep -f 'sleep 301[7]' >/dev/null; }
check "slow: debootstrap runs" running
kill -TERM "$b" || true
rc=0
wait "$b" || rc=$?
check "killed: exits non-zero ($rc)" [ "$rc" -ne 0 ]
stopped() { # the fake debootstrap's sleep ends within 5 s
  for _ in $(seq 50); do pgrep -f 'sleep 301[7]' >/dev/null || return 0; sleep 0.1; done
  return 1
}
check "killed: no debootstrap left" stopped
check "killed: caches nothing, leaves nothing" nothing_left

# a killed build's folder, with a mount in it, goes at the next build; a
# second build waits for the lock the first holds
mkdir -p "$cachedir/.build-stale/redis/proc"
mount -t tmpfs stale "$cachedir/.build-stale/redis/proc"
exec 8>"$cachedir/.lock"
flock 8
"$here/build.sh" >"$tmp/out" 2>"$tmp/err" &
b=$!
for _ in $(seq 100); do grep -q 'waiting' "$tmp/err" && break; sleep 0.1; done
check "locked: the second build waits" grep -q 'another build of the service images runs' "$tmp/err"
check "locked: and has not started" [ ! -e "$cachedir/$key" ]
flock -u 8
exec 8>&-
rc=0
wait "$b" || rc=$?
check "a good build: exits 0 ($rc)" [ "$rc" -eq 0 ]
check "a good build: caches both images" [ -f "$cachedir/$key/postgres.tar" -a -f "$cachedir/$key/redis.tar" ]
check "a good build: prints the folder" [ "$(cat "$tmp/out")" = "$cachedir/$key" ]
check "the stale work folder and its mount are gone" [ ! -e "$cachedir/.build-stale" ]
[ "$fail" -eq 0 ] || { echo "build-test: FAILED (last stderr below)" >&2; cat "$tmp/err" >&2; exit 1; }
echo "build-test: ok"
