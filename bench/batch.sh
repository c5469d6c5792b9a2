#!/usr/bin/env bash
# Benchmarks `ntdbg triage` (dumps/s at --jobs 1 and 2) on >= 500 dump copies and
# `ntdbg list` on 10,000 copies. Copies are hard links in a temporary folder (plain copies
# when the file system refuses links). Usage: bash bench/batch.sh [TRIAGE_N] [LIST_N]
# Needs the shared corpus (../shared/testdata or $NTDBG_TESTDATA).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
data="${NTDBG_TESTDATA:-$here/../shared/testdata}"
triage_n="${1:-500}"
list_n="${2:-10000}"
bin="$here/target/release/ntdbg"
(cd "$here" && cargo build --release -q -p ntdbg-cli)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

link() { ln "$1" "$2" 2>/dev/null || cp "$1" "$2"; }
now() { date +%s.%N; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { t = b - a; printf "%d dumps in %.2f s = %.0f dumps/s\n", n, t, n / t }'; }

# Triage set: the winelab x64 dumps (symbols beside them), cycled to triage_n files.
mkdir -p "$work/triage"
src=("$data"/winelab/x64/*.dmp)
link "$data/winelab/x64/crashy.exe" "$work/triage/crashy.exe"
link "$data/winelab/x64/crashy.pdb" "$work/triage/crashy.pdb"
for ((i = 0; i < triage_n; i++)); do
    f="${src[$((i % ${#src[@]}))]}"
    link "$f" "$work/triage/$(printf '%05d' "$i")-$(basename "$f")"
done
for jobs in 1 2; do
    a=$(now)
    "$bin" triage "$work/triage" --jobs "$jobs" --offline --json > "$work/triage-$jobs.json"
    b=$(now)
    printf 'triage --jobs %s: ' "$jobs"
    rate "$triage_n" "$a" "$b"
done
buckets=$(grep -c '"signature": "[^"]*",$' "$work/triage-1.json" || true)
echo "  ($buckets signature lines in the JSON; buckets + representatives)"

# List set: every user and kernel dump of the corpus, cycled to list_n files.
mkdir -p "$work/list"
mapfile -t all < <(find "$data" -name '*.dmp' -type f | sort)
for ((i = 0; i < list_n; i++)); do
    f="${all[$((i % ${#all[@]}))]}"
    link "$f" "$work/list/$(printf '%06d' "$i").dmp"
done
sync
"$bin" list "$work/list" --json > /dev/null # warm the page cache
a=$(now)
"$bin" list "$work/list" --json > "$work/list.json"
b=$(now)
printf 'list (warm cache): '
rate "$list_n" "$a" "$b"
