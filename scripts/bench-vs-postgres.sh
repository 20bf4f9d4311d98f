#!/usr/bin/env bash
# Docket next to PostgreSQL doing the same work, in one run, on this machine.
#
#   scripts/bench-vs-postgres.sh [SECONDS]      (default 8 s per measurement)
#   DOCKET_BIN=/path/to/docket scripts/bench-vs-postgres.sh   (a given build, not this tree's)
#
# Docket: a release `docket serve` on a fresh embedded ledger, driven by
# `docket bench-load` over gRPC: unary `Ledger.Append` and `Ledger.AppendStream`
# (8 statements in flight per client), 1, 16 and 64 clients. Every append is an
# ed25519-signed statement, verified, sequenced, fsynced and anchored. The
# `unary-h2` rows send the same unary appends from `bench-load --raw-h2`, a lean
# client on the h2 crate (bodies encoded before the clock starts), as pgbench
# is a lean client: less of the cores the server shares with it goes to the client.
#
# PostgreSQL: a throwaway server (initdb in a temp dir, a free port, fsync on,
# synchronous_commit on) with a hash-chained append-only table: each append
# takes an advisory lock, reads the previous row's hash and inserts
# (payload, sha256(prev || payload)) in one committed transaction, driven by
# pgbench with the same client counts. No signature checks at all.
#
# Also prints the disk's floor for one client (an fdatasync after a pause), and
# `cargo run --release -p docket-benches --example one_client` prints the whole
# one-client floor (round trip, fdatasync, signature check, checkpoint signature).
#
# Prints one table with the ratios (Docket / PostgreSQL). If PostgreSQL cannot
# be installed or started, it says why and measures Docket alone.
set -euo pipefail
SECONDS_EACH="${1:-8}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d /tmp/docket-vs-pg.XXXXXX)"
chmod 755 "$WORK"
cleanup() {
  [[ -n "${DOCKET_PID:-}" ]] && kill "$DOCKET_PID" 2>/dev/null || true
  if [[ -n "${PGBIN:-}" && -d "$WORK/pg" ]]; then
    as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

echo "== machine"
echo "$(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
# The disk's floor for one client, on the disk the ledger and PostgreSQL use:
# a 4 KiB overwrite + fdatasync back to back, and after a 300 us pause (one
# client's appends and commits always follow a pause: their round trip; a
# virtual disk is often slower then). Every one-client append pays one.
python3 - "$WORK" <<'PY'
import os, statistics, sys, time
path = os.path.join(sys.argv[1], "fsync-probe")
fd = os.open(path, os.O_RDWR | os.O_CREAT)
os.write(fd, b"\0" * 4096); os.fsync(fd)
def p50(pause):
    lat = []
    for i in range(1000):
        if pause:
            time.sleep(pause)
        t = time.perf_counter(); os.pwrite(fd, bytes([i % 256]) * 4096, 0); os.fdatasync(fd)
        lat.append(time.perf_counter() - t)
    return statistics.median(lat) * 1e6
print("disk floor: 4 KiB overwrite + fdatasync p50 %.0f us back to back, %.0f us after a 300 us pause"
      % (p50(0), p50(0.0003)))
os.close(fd); os.unlink(path)
PY

if [[ -n "${DOCKET_BIN:-}" ]]; then
  # Another build, to compare two binaries in the same minutes.
  DOCKET="$DOCKET_BIN"
  echo "== docket binary $DOCKET (DOCKET_BIN)"
else
  echo "== building docket (release)"
  (cd "$ROOT" && cargo build --release -p docket --quiet)
  DOCKET="$ROOT/target/release/docket"
fi

# --- PostgreSQL -------------------------------------------------------------
PGBIN=""
find_pg() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1; }
PGBIN="$(find_pg || true)"
if [[ -z "$PGBIN" ]] && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  echo "== installing PostgreSQL from the distribution's packages"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql postgresql-contrib) >/dev/null 2>&1 || true
  PGBIN="$(find_pg || true)"
fi
PG_OK=0
if [[ -n "$PGBIN" && -x "$PGBIN/initdb" ]] && command -v pgbench >/dev/null; then
  PGPORT="$(free_port)"
  if [[ $(id -u) == 0 ]]; then chown postgres "$WORK"; fi
  if as_pg "$PGBIN/initdb" -D "$WORK/pg" -A trust -U postgres >/dev/null 2>&1 \
     && as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg.log" -w \
          -o "-p $PGPORT -k $WORK -c fsync=on -c synchronous_commit=on -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null; then
    PG_OK=1
    PSQL=(psql -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -v ON_ERROR_STOP=1)
    "${PSQL[@]}" <<'SQL'
CREATE TABLE log (seq bigserial PRIMARY KEY, payload bytea NOT NULL, hash bytea NOT NULL);
CREATE FUNCTION append(p bytea) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE prev bytea; s bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(42);
  SELECT hash INTO prev FROM log ORDER BY seq DESC LIMIT 1;
  INSERT INTO log (payload, hash) VALUES (p, sha256(coalesce(prev, ''::bytea) || p)) RETURNING seq INTO s;
  RETURN s;
END $$;
SQL
    echo "SELECT append(convert_to(md5(random()::text) || md5(random()::text), 'UTF8'));" > "$WORK/append.sql"
    echo "== PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on port $PGPORT (fsync on, synchronous_commit on)"
  else
    echo "PostgreSQL did not start (see below); measuring Docket alone"
    tail -n 5 "$WORK/pg.log" 2>/dev/null || true
  fi
else
  echo "PostgreSQL or pgbench not found and not installable here; measuring Docket alone"
fi

pg_run() { # clients -> "tps latency_ms"
  local c="$1"
  pgbench -h 127.0.0.1 -p "$PGPORT" -U postgres -n -f "$WORK/append.sql" \
    -c "$c" -j "$(( c < 2 ? 1 : 2 ))" -T "$SECONDS_EACH" postgres 2>/dev/null \
    | awk '/^latency average/ {lat=$4} /^tps/ {tps=$3} END {printf "%.0f %.2f", tps, lat}'
}

# --- Docket -----------------------------------------------------------------
"$DOCKET" --data "$WORK/ledger" init >/dev/null
DPORT="$(free_port)"
"$DOCKET" --data "$WORK/ledger" serve --listen "127.0.0.1:$DPORT" >"$WORK/serve.log" 2>&1 &
DOCKET_PID=$!
for _ in $(seq 100); do
  "$DOCKET" --server "http://127.0.0.1:$DPORT" checkpoint >/dev/null 2>&1 && break
  sleep 0.1
done
docket_run() { # clients mode -> "appends/s p50_ms p99_ms"
  local c="$1" mode="$2" extra=()
  [[ "$mode" == stream ]] && extra=(--stream --window 8)
  [[ "$mode" == unary-h2 ]] && extra=(--raw-h2)
  "$DOCKET" --json --server "http://127.0.0.1:$DPORT" bench-load --key "$WORK/ledger/keys/admin.key" \
    --clients "$c" --seconds "$SECONDS_EACH" "${extra[@]}" \
    | python3 -c 'import json,sys; r=[json.loads(l) for l in sys.stdin if l.strip().startswith("{")][-1]; r=r.get("report",r); print("%.0f %.2f %.2f" % (r["appends_per_sec"], r["p50_us"]/1000, r["p99_us"]/1000))'
}

printf '\n%-8s %-8s | %-28s | %-22s | %s\n' clients mode "docket appends/s (p50, p99)" "postgres tps (mean)" "ratio"
printf -- '---------+----------+------------------------------+------------------------+------\n'
for c in 1 16 64; do
  pg="- -"
  [[ $PG_OK == 1 ]] && pg="$(pg_run "$c")"
  read -r pg_tps pg_lat <<<"$pg"
  for mode in unary unary-h2 stream; do
    read -r d_rate d_p50 d_p99 <<<"$(docket_run "$c" "$mode")"
    ratio="-"
    [[ "$pg_tps" != "-" && "$pg_tps" != "0" ]] && ratio="$(python3 -c "print('%.2f' % ($d_rate/$pg_tps))")"
    printf '%-8s %-8s | %8s (%6s ms, %6s ms) | %8s (%6s ms)    | %s\n' \
      "$c" "$mode" "$d_rate" "$d_p50" "$d_p99" "$pg_tps" "$pg_lat" "$ratio"
  done
done
