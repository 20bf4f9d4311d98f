#!/usr/bin/env bash
# Two (or more) docket builds side by side, in the same minutes: for each
# binary in turn, a fresh ledger, `docket serve` on a free loopback port and
# `docket bench-load` for each case. Interleave the binaries (A B A B) to see
# past this machine's drift.
#
#   scripts/ab-load.sh SECONDS "CLIENTS:MODE ..." BIN [BIN ...]
#   scripts/ab-load.sh 4 "1:unary 16:unary 64:stream" /tmp/before target/release/docket /tmp/before target/release/docket
#
# MODE is unary, h2 (unary from the lean client, --raw-h2) or stream (8 in
# flight per client). Prints one line per binary and case: appends/s, p50
# and p99 in ms.
set -euo pipefail
if [[ $# -lt 3 ]]; then
  sed -n '2,12p' "$0" >&2
  exit 2
fi
SECS=$1
CASES=$2
shift 2
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
for bin in "$@"; do
  work="$(mktemp -d /tmp/docket-ab.XXXXXX)"
  "$bin" --data "$work/ledger" init >/dev/null
  port="$(free_port)"
  "$bin" --data "$work/ledger" serve --listen "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    "$bin" --server "http://127.0.0.1:$port" checkpoint >/dev/null 2>&1 && break
    sleep 0.1
  done
  for case in $CASES; do
    clients=${case%%:*}
    mode=${case##*:}
    extra=()
    [[ $mode == stream ]] && extra=(--stream --window 8)
    [[ $mode == h2 ]] && extra=(--raw-h2)
    result="$("$bin" --json --server "http://127.0.0.1:$port" bench-load \
      --key "$work/ledger/keys/admin.key" --clients "$clients" --seconds "$SECS" "${extra[@]}" \
      | python3 -c 'import json,sys; r=[json.loads(l) for l in sys.stdin if l.strip().startswith("{")][-1]; r=r.get("report",r); print("%.0f/s p50 %.2f ms p99 %.2f ms" % (r["appends_per_sec"], r["p50_us"]/1000, r["p99_us"]/1000))')"
    echo "$bin $clients $mode: $result"
  done
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  rm -rf "$work"
done
