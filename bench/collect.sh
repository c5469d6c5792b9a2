#!/usr/bin/env bash
# Collector throughput and end-to-end latency (BENCHMARKS.md, "Crash collector"), against the
# Crashpad-protocol client (tools/crashpad_upload.py's request, sent by bench/collect_load.py):
#   1. reports accepted per second: N different reports of the generator's dumps (the five
#      small crashy samples, then all six with the 1 MB stack-overflow dump), one connection per
#      report, collector on SQLite with a local store, with and without its analysis worker;
#   2. upload to report: RATE reports a second for SECONDS, each timed from the start of its
#      upload until its analysis is in the database (the collector's own worker, SQLite).
# Every report is fsynced (dump, then database) before it is answered.
# Usage: NTDBG=target/release/ntdbg bench/collect.sh [N] [RATE] [SECONDS]   (default 5000 20 30)
set -euo pipefail
NTDBG=$(realpath "${NTDBG:-target/release/ntdbg}")
N=${1:-5000}
RATE=${2:-20}
SECONDS_=${3:-30}
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/ntdbg-collect-bench.XXXXXX)
SERVER=
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
SMALL=("$REPO"/testdata/crashy-x64-{null,divzero,breakpoint,raise,thread}.dmp)
ALL=("$REPO"/testdata/crashy-x64-*.dmp)

start() { # name, extra collect flags…
  local name=$1; shift
  rm -rf "$WORK/$name"; mkdir -p "$WORK/$name"
  "$NTDBG" symbols upload "$REPO/testdata/crashy.pdb" "$REPO/testdata/crashy.exe" --store "$WORK/$name/store" >/dev/null
  "$NTDBG" collect --listen 127.0.0.1:0 --db "$WORK/$name/crashes.db" --store "$WORK/$name/store" \
    --rate-limit 0 --offline --max-connections 512 "$@" 2>"$WORK/$name/log" &
  SERVER=$!
  URL=
  for _ in $(seq 300); do
    URL=$(grep -o 'http://[^ ]*/submit' "$WORK/$name/log" || true)
    [ -n "$URL" ] && break
    sleep 0.1
  done
  [ -n "$URL" ] || { cat "$WORK/$name/log" >&2; exit 1; }
}
stop() { kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=; }

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
start small-noworker --workers 0
echo -n "small dumps, no analysis worker:  "; python3 "$REPO/bench/collect_load.py" throughput "$URL" "$N" "${SMALL[@]}"
stop
start small-worker --workers 1
echo -n "small dumps, 1 analysis worker:   "; python3 "$REPO/bench/collect_load.py" throughput "$URL" "$N" "${SMALL[@]}"
stop
start all-noworker --workers 0
echo -n "all six dumps, no analysis worker: "; python3 "$REPO/bench/collect_load.py" throughput "$URL" "$N" "${ALL[@]}"
stop
start latency --workers 1
echo -n "end to end (SQLite, 1 worker):    "; python3 "$REPO/bench/collect_load.py" latency "$URL" "$WORK/latency/crashes.db" "$RATE" "$SECONDS_" "${SMALL[@]}"
stop
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
