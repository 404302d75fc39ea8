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

init() {
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "postgres: the database is not initialised and POSTGRES_PASSWORD is not set" >&2
    exit 1
  fi
  mkdir -p "$PGDATA"
  chmod 700 "$PGDATA" || {
    echo "postgres: cannot own $PGDATA (uid $(id -u)): give the volume's group to the unit (fsGroup 999)" >&2
    exit 1
  }
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  # shellcheck disable=SC2086 # more initdb arguments, split as words
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 ${POSTGRES_INITDB_ARGS:-}
  rm -f "$pwfile"
  printf '\n# every host, with a password\nhost all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"

  # a server on the unit's socket only, while the database is made
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
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
  pg_ctl -D "$PGDATA" -m fast -w stop
  echo "postgres: initialised $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
}

[ -s "$PGDATA/PG_VERSION" ] || init
exec "$@"
