#!/usr/bin/env bash
# Crash-store ingest throughput (BENCHMARKS.md, "Crash store ingest"): the six sample dumps
# copied COPIES times with different contents, ingested into a fresh SQLite file with --jobs 1
# and 2, then queued in a fresh PostgreSQL database and taken by 1, 2 and 4 workers.
# Usage: NTDBG=target/release/ntdbg bench/store-ingest.sh [COPIES]   (default 100)
# PostgreSQL: the server binaries (initdb, postgres) of /usr/lib/postgresql/*/bin or PATH; as
# root the server runs as nobody. Everything lives in a temporary folder, removed at the end.
set -euo pipefail
NTDBG=$(realpath "${NTDBG:-target/release/ntdbg}")
COPIES=${1:-100}
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/ntdbg-store-bench.XXXXXX)
PG_PID=
cleanup() { [ -n "$PG_PID" ] && kill -INT "$PG_PID" 2>/dev/null && wait "$PG_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
chmod 755 "$WORK"
mkdir "$WORK/dumps"
for f in "$REPO"/testdata/crashy-x64-*.dmp; do
  for i in $(seq 1 "$COPIES"); do
    { cat "$f"; printf 'copy %d' "$i"; } > "$WORK/dumps/$(printf %05d "$i")-$(basename "$f")"
  done
done
N=$(ls "$WORK/dumps" | wc -l)
FLAGS=(--offline --symbols "$REPO/testdata")
rate() { echo "scale=1; $N / $1" | bc -l; }
now() { date +%s.%N; }

for jobs in 1 2; do
  rm -f "$WORK"/sqlite.db*
  start=$(now)
  "$NTDBG" ingest "$WORK/dumps" --db "$WORK/sqlite.db" --jobs "$jobs" "${FLAGS[@]}" >/dev/null
  secs=$(echo "$(now) - $start" | bc -l)
  printf 'sqlite  --jobs %d: %d dumps in %.2f s = %s dumps/s\n' "$jobs" "$N" "$secs" "$(rate "$secs")"
done

BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$BIN/initdb" ] || BIN=$(dirname "$(command -v initdb)")
AS=()
if [ "$(id -u)" = 0 ]; then chown nobody "$WORK"; AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups); fi
"${AS[@]}" "$BIN/initdb" -D "$WORK/pg" -U ntdbg --auth=trust --no-sync -E UTF8 --locale=C >/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${AS[@]}" "$BIN/postgres" -D "$WORK/pg" -k "$WORK" -h 127.0.0.1 -p "$PORT" 2>"$WORK/pg.log" &
PG_PID=$!
for _ in $(seq 100); do "$NTDBG" crashes --db "postgres://ntdbg@127.0.0.1:$PORT/postgres" --top 0 >/dev/null 2>&1 && break; sleep 0.2; done
db=0
for workers in 1 2 4; do
  db=$((db + 1))
  "${AS[@]}" "$BIN/psql" -q -h 127.0.0.1 -p "$PORT" -U ntdbg -d postgres -c "CREATE DATABASE bench$db" >/dev/null
  URL="postgres://ntdbg@127.0.0.1:$PORT/bench$db"
  "$NTDBG" enqueue "$WORK/dumps" --db "$URL" >/dev/null
  start=$(now)
  for _ in $(seq 1 "$workers"); do "$NTDBG" worker --db "$URL" "${FLAGS[@]}" >/dev/null & done
  wait $(jobs -p | grep -v "^$PG_PID$")
  secs=$(echo "$(now) - $start" | bc -l)
  printf 'postgres %d worker(s): %d dumps in %.2f s = %s dumps/s\n' "$workers" "$N" "$secs" "$(rate "$secs")"
done
