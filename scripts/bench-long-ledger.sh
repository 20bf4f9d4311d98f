#!/usr/bin/env bash
# Does a long ledger append as fast as a fresh one?
#
#   scripts/bench-long-ledger.sh [EVENTS] [SECONDS]   (defaults: 1000000, 4)
#
# Starts a release `docket serve` on a fresh embedded ledger, measures 64
# unary clients (`docket bench-load --clients 64`) for SECONDS, fills the
# ledger to at least EVENTS events with AppendStream (64 clients, 8 in flight
# each), then measures 64 unary clients three more times and prints the
# server's RSS and the data directory's size. Issue 14's goals (64 unary
# clients >= 15k/s, RSS < 256 MB at 1M events) are meant at any length; this
# is where a length-dependent cost shows (docs/BENCHMARKS.md: the statement
# index's syncs and page-cache folios once cut 16k/s to 10k/s at 830k events).
set -euo pipefail
EVENTS="${1:-1000000}"
SECS="${2:-4}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d /tmp/docket-long.XXXXXX)"
cleanup() {
  if [[ -n "${DOCKET_PID:-}" ]]; then
    kill "$DOCKET_PID" 2>/dev/null || true
    wait "$DOCKET_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== building docket (release)"
(cd "$ROOT" && cargo build --release -p docket --quiet)
BIN="$ROOT/target/release/docket"
DATA="$WORK/data"
"$BIN" --data "$DATA" init >/dev/null
PORT="$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')"
"$BIN" --data "$DATA" serve --listen "127.0.0.1:$PORT" >"$WORK/serve.log" 2>&1 &
DOCKET_PID=$!
URL="http://127.0.0.1:$PORT"
for _ in $(seq 100); do "$BIN" --server "$URL" checkpoint >/dev/null 2>&1 && break; sleep 0.1; done

# One bench-load run; prints "RATE/s (p50 MS ms, p99 MS ms)".
load() {
  "$BIN" --json --server "$URL" bench-load --key "$DATA/keys/admin.key" "$@" | tail -1 |
    python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); r=r.get("report",r); print("%6.0f/s (p50 %.2f ms, p99 %.2f ms)" % (r["appends_per_sec"], r["p50_us"]/1e3, r["p99_us"]/1e3))'
}
size() { "$BIN" --server "$URL" checkpoint | sed -n 2p; }

echo "== 64 unary clients, fresh ledger ($(size) events)"
echo "   $(load --clients 64 --seconds "$SECS")"
echo "== filling to $EVENTS events (AppendStream, 64 clients x 8)"
while [[ "$(size)" -lt "$EVENTS" ]]; do
  echo "   $(load --clients 64 --seconds 10 --stream --window 8); now $(size) events"
done
for i in 1 2 3; do
  echo "== 64 unary clients, $(size) events, run $i"
  echo "   $(load --clients 64 --seconds "$SECS")"
done
echo "== server RSS $(( $(ps -o rss= -p "$DOCKET_PID") / 1024 )) MB; data directory $(du -sh "$DATA" | cut -f1)"
