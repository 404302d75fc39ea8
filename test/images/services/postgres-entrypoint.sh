#!/bin/sh
# The entrypoint of the local cluster's postgres image (test/images/services):
# what the official image's docker-entrypoint.sh does, for the parts a plan
# uses, so a plan written for that image works with this one.
#   PGDATA             default /var/lib/postgresql/data/pgdata (a folder
#                      below the volume's root, which may hold lost+found)
#   POSTGRES_USER      default postgres
#   POSTGRES_PASSWORD  required to initialise
#   POSTGRES_DB        default $POSTGRES_USER
#   POSTGRES_INITDB_ARGS  more initdb arguments
# On an empty PGDATA: initdb (scram-sha-256 for every host, trust on the
# local socket inside the unit, as the official image), the database made,
# /docker-entrypoint-initdb.d/*.sql and *.sh run; then postgres replaces
# this shell as PID 1 (the image's stop signal, SIGINT, is its fast
# shutdown).
set -eu

# a first argument that is a flag is postgres's; any other command runs as is
case "${1:-}" in
  -*) set -- postgres "$@" ;;
  '') set -- postgres ;;
esac
[ "$1" = postgres ] || exec "$@"

if [ "$(id -u)" = 0 ]; then
  echo "postgres: refusing to run as root; run as the image's user (uid 999)" >&2
  exit 1
fi
export PGDATA="${PGDATA:-/var/lib/postgresql/data/pgdata}"
POSTGRES_USER="${POSTGRES_USER:-postgres}"
POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"

# init: a new database, made in $PGDATA.init beside PGDATA and renamed to
# PGDATA when complete, so a stop midway (a deleted pod) leaves no
# half-made database to start: the next start makes it again.
init() {
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "postgres: the database is not initialised and POSTGRES_PASSWORD is not set" >&2
    exit 1
  fi
  parent=$(dirname "$PGDATA")
  mkdir -p "$parent" 2>/dev/null || true
  [ -w "$parent" ] || {
    echo "postgres: cannot write $parent (uid $(id -u)): give the volume's group to the unit (fsGroup 999)" >&2
    exit 1
  }
  # postgres wants its folder owned by its user, mode 700 (a volume's root
  # as PGDATA is this unit's when it can chmod it)
  if [ -d "$PGDATA" ] && ! chmod 700 "$PGDATA" 2>/dev/null; then
    echo "postgres: cannot own $PGDATA (uid $(id -u)): give the volume's group to the unit (fsGroup 999), or set PGDATA to a folder below the volume's root" >&2
    exit 1
  fi
  # PGDATA names the new folder while it is made (an initdb.d script may use it)
  final=$PGDATA new=$PGDATA.init
  export PGDATA="$new"
  rm -rf "$new"
  mkdir -m 700 "$new"
  pwfile=$(mktemp)
  trap 'rm -f "$pwfile"' EXIT
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  # shellcheck disable=SC2086 # more initdb arguments, split as words
  initdb -D "$new" --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 ${POSTGRES_INITDB_ARGS:-}
  rm -f "$pwfile"
  printf '\n# every host, with a password\nhost all all all scram-sha-256\n' >> "$new/pg_hba.conf"

  # a server on the unit's socket only, while the database is made
  pg_ctl -D "$new" -o "-c listen_addresses=''" -w start
  if [ "$POSTGRES_DB" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --dbname postgres --set db="$POSTGRES_DB" <<'SQL'
CREATE DATABASE :"db";
SQL
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sql) echo "postgres: running $f"; psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -f "$f" ;;
      *.sh) echo "postgres: running $f"; . "$f" ;;
    esac
  done
  pg_ctl -D "$new" -m fast -w stop
  export PGDATA="$final"
  if [ -d "$PGDATA" ] && [ -z "$(ls -A "$PGDATA")" ] && ! rmdir "$PGDATA" 2>/dev/null; then
    # an empty PGDATA that cannot go is the volume's mount point: the
    # files move in, PG_VERSION (what marks a database made) last
    for f in "$new"/*; do
      [ "$f" = "$new/PG_VERSION" ] || mv "$f" "$PGDATA/"
    done
    mv "$new/PG_VERSION" "$PGDATA/"
    rmdir "$new"
  else
    # -T: never into PGDATA; one that holds files is an error
    mv -T "$new" "$PGDATA" || {
      echo "postgres: cannot put the new database at $PGDATA: it holds files but no database (PG_VERSION)" >&2
      exit 1
    }
  fi
  echo "postgres: initialised $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
}

[ -s "$PGDATA/PG_VERSION" ] || init
exec "$@"
