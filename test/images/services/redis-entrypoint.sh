#!/bin/sh
# The entrypoint of the local cluster's redis image (test/images/services):
# arguments that are flags go to redis-server (args: [--requirepass, X]), as
# with the official image; any other command runs as is.
set -eu
case "${1:-}" in
  -* | '') set -- redis-server "$@" ;;
esac
exec "$@"
