#!/usr/bin/env bash
# `ntdbg triage` throughput before and after one symbol store per run: N hard-linked copies of
# the repository's x64 sample dumps (testdata/crashy-x64-*.dmp, crashy.exe and crashy.pdb
# beside them) in a temporary folder, triaged by two binaries alternately, ROUNDS times each;
# prints each one's median dumps/s, the ratio, and whether both print the same JSON.
#
# Usage: bash bench/triage-shared.sh BEFORE_BIN AFTER_BIN [N=2000] [ROUNDS=3] [JOBS=2]
# (BEFORE_BIN: a release `ntdbg` built from the commit before; AFTER_BIN: this one's.)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
before="$1"
after="$2"
n="${3:-2000}"
rounds="${4:-3}"
jobs="${5:-2}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
source "$here/bench/measure.sh"

link() { ln "$1" "$2" 2>/dev/null || cp "$1" "$2"; }
mkdir -p "$WORK/dumps"
src=("$here"/testdata/crashy-x64-*.dmp)
link "$here/testdata/crashy.exe" "$WORK/dumps/crashy.exe"
link "$here/testdata/crashy.pdb" "$WORK/dumps/crashy.pdb"
for ((i = 0; i < n; i++)); do
    f="${src[$((i % ${#src[@]}))]}"
    link "$f" "$WORK/dumps/$(printf '%05d' "$i")-$(basename "$f")"
done

triage() { "$1" triage "$WORK/dumps" --offline --json --jobs "$jobs"; }
triage "$before" > "$WORK/before.json"
triage "$after" > "$WORK/after.json"
if cmp -s "$WORK/before.json" "$WORK/after.json"; then
    echo "JSON: identical ($(stat -c %s "$WORK/after.json") bytes)"
else
    echo "JSON: DIFFERS (expected only where the two builds differ on purpose)"
    diff "$WORK/before.json" "$WORK/after.json" | head -10 || true
fi

: > "$WORK/before.m"; : > "$WORK/after.m"
for ((r = 0; r < rounds; r++)); do
    measure "$before" triage "$WORK/dumps" --offline --json --jobs "$jobs" >> "$WORK/before.m"
    measure "$after" triage "$WORK/dumps" --offline --json --jobs "$jobs" >> "$WORK/after.m"
done
report() {
    local t rss
    t=$(awk '{print $1}' "$WORK/$1.m" | median)
    rss=$(awk '{print $2}' "$WORK/$1.m" | median)
    printf '%-6s %6.0f dumps/s (%d dumps in %.2f s, median of %d), peak RSS %d MiB\n' \
        "$1" "$(echo "$n / $t" | bc -l)" "$n" "$t" "$rounds" $((rss / 1024))
}
report before
report after
bt=$(awk '{print $1}' "$WORK/before.m" | median)
at=$(awk '{print $1}' "$WORK/after.m" | median)
echo "after / before dumps/s: $(echo "$bt / $at" | bc -l | cut -c1-5) (--jobs $jobs, load $(cut -d' ' -f1 /proc/loadavg))"
