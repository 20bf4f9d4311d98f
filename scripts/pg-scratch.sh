#!/usr/bin/env bash
# A throwaway PostgreSQL server for trying Docket on PostgreSQL by hand.
#
#   scripts/pg-scratch.sh start [DIR]   # prints the URL of a fresh database
#   scripts/pg-scratch.sh stop  [DIR]   # stops the server and removes DIR
#
# Uses initdb/pg_ctl from PATH or the newest /usr/lib/postgresql/*/bin
# (Debian: apt-get install postgresql). As root, the server runs as the
# `postgres` user (initdb refuses root). fsync and synchronous commit stay
# on. The tests and benches start their own (docket_store_pg::scratch).
set -euo pipefail

cmd=${1:-start}
dir=${2:-${TMPDIR:-/tmp}/docket-pg-scratch}

bindir=""
if command -v initdb >/dev/null 2>&1; then
  bindir=$(dirname "$(readlink -f "$(command -v initdb)")")
else
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do
    [ -x "$d/initdb" ] && bindir=$d
  done
fi
if [ -z "$bindir" ]; then
  echo "no PostgreSQL (initdb) found: apt-get install -y postgresql" >&2
  exit 1
fi

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    if [ ! -d "$dir/data" ]; then
      mkdir -p "$dir"
      [ "$(id -u)" = 0 ] && chown postgres: "$dir"
      as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >/dev/null
    fi
    port=${PGPORT_SCRATCH:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
    as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on" start >/dev/null
    echo "$port" > "$dir/port"
    db="docket_$(date +%s)"
    as_pg "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -qc "CREATE DATABASE $db" postgres
    echo "postgres://postgres@127.0.0.1:$port/$db"
    ;;
  stop)
    if [ -d "$dir/data" ]; then
      as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast stop >/dev/null || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop [DIR]" >&2
    exit 64
    ;;
esac
