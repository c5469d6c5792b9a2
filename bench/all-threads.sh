#!/usr/bin/env bash
# Every thread's stack: `ntdbg run DUMP -c "~*k" --json` against `minidump-stackwalk --json`
# on the same dumps and the same Breakpad symbols, the two run alternately in one script:
# median wall time, the median of the per-pair ratios ntdbg/msw, and median peak RSS.
#
# ntdbg reads the Firefox symbols three ways: plain `.sym` (the decompressed copies
# minidump-stackwalk also gets), `.sym.xz` with an empty symbol cache on every run (cold:
# decompress, then keep the plain copy), and `.sym.xz` with the cache kept between runs (warm).
# minidump-stackwalk reads the plain `.sym` files in every row.
#
# usage: bench/all-threads.sh [PAIRS] [NTDBG]   (PAIRS default 11; NTDBG default
#        target/release/ntdbg; needs minidump-stackwalk on PATH)
set -euo pipefail
PAIRS=${1:-11}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=${NTDBG_TESTDATA:-$ROOT/../shared/testdata}
NTDBG=${2:-$ROOT/target/release/ntdbg}
MSW=$(command -v minidump-stackwalk) || { echo "minidump-stackwalk not on PATH" >&2; exit 2; }
[ -x "$NTDBG" ] || { echo "build first: cargo build --release -p ntdbg-cli" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

FF=$T/mozilla-minidump-stackwalk-pgo/pgo_data
FF_XZ=$FF/symbols
FF_PLAIN=$WORK/firefox-symbols
cp -r "$FF_XZ" "$FF_PLAIN"
chmod -R u+w "$FF_PLAIN"
find "$FF_PLAIN" -name '*.sym.xz' -exec xz -d {} +
mkdir -p "$WORK/empty" "$WORK/warm-cache"
xz -dc "$T/winelab/x64/null.inproc-full.dmp.xz" >"$WORK/null.inproc-full.dmp"

# name|dump|symbols for ntdbg|symbols for msw|symbol cache (cold: emptied before each run)
cases=(
  "breakpad minidump2 (2 thr)|$T/google-breakpad/src/processor/testdata/minidump2.dmp|$T/google-breakpad/src/processor/testdata/symbols|$T/google-breakpad/src/processor/testdata/symbols|cold"
  "winelab x64 stack.inproc, deep recursion (no symbols)|$T/winelab/x64/stack.inproc.dmp|$WORK/empty|$WORK/empty|cold"
  "winelab x64 full memory 32 MiB (no symbols)|$WORK/null.inproc-full.dmp|$WORK/empty|$WORK/empty|cold"
  "firefox x86_64, plain .sym|$FF/minidumps/windows-x86_64.dmp|$FF_PLAIN|$FF_PLAIN|cold"
  "firefox x86_64, .sym.xz cold cache|$FF/minidumps/windows-x86_64.dmp|$FF_XZ|$FF_PLAIN|cold"
  "firefox x86_64, .sym.xz warm cache|$FF/minidumps/windows-x86_64.dmp|$FF_XZ|$FF_PLAIN|warm"
  "firefox aarch64, plain .sym|$FF/minidumps/windows-aarch64.dmp|$FF_PLAIN|$FF_PLAIN|cold"
  "firefox aarch64, .sym.xz cold cache|$FF/minidumps/windows-aarch64.dmp|$FF_XZ|$FF_PLAIN|cold"
  "firefox aarch64, .sym.xz warm cache|$FF/minidumps/windows-aarch64.dmp|$FF_XZ|$FF_PLAIN|warm"
)

# shellcheck source=bench/measure.sh
source "$ROOT/bench/measure.sh"
# Threads and frames of minidump-stackwalk's JSON (the work both tools do).
shape() {
  "$MSW" --json --features stable-all "$1" "$2" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(len(d["threads"]), sum(len(t["frames"]) for t in d["threads"]))'
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores); $PAIRS pairs per row"
printf '| work | threads | frames (msw) | ntdbg median s | msw median s | ratio ntdbg/msw (median of pairs) | ntdbg peak RSS MiB | msw peak RSS MiB |\n|---|---|---|---|---|---|---|---|\n'
for c in "${cases[@]}"; do
  IFS='|' read -r name dump nsyms msyms cache <<<"$c"
  read -r threads frames < <(shape "$dump" "$msyms")
  : >"$WORK/n"; : >"$WORK/m"; : >"$WORK/r"
  rm -rf "$WORK/warm-cache"; mkdir -p "$WORK/warm-cache"
  [ "$cache" = warm ] && NTDBG_SYMBOL_CACHE=$WORK/warm-cache "$NTDBG" run "$dump" -c '~*k' --json --offline --symbols "$nsyms" >/dev/null 2>&1
  for _ in $(seq "$PAIRS"); do
    if [ "$cache" = cold ]; then rm -rf "$WORK/cold-cache"; mkdir -p "$WORK/cold-cache"; fi
    dir=$WORK/$cache-cache
    n=$(NTDBG_SYMBOL_CACHE=$dir measure "$NTDBG" run "$dump" -c '~*k' --json --offline --symbols "$nsyms")
    m=$(measure "$MSW" --json --features stable-all "$dump" "$msyms")
    echo "$n" >>"$WORK/n"; echo "$m" >>"$WORK/m"
    awk -v a="${n%% *}" -v b="${m%% *}" 'BEGIN { printf "%.4f\n", a / b }' >>"$WORK/r"
  done
  nt=$(cut -d' ' -f1 "$WORK/n" | median); mt=$(cut -d' ' -f1 "$WORK/m" | median)
  nr=$(cut -d' ' -f2 "$WORK/n" | median); mr=$(cut -d' ' -f2 "$WORK/m" | median)
  printf '| %s | %s | %s | %.3f | %.3f | %.2f | %.1f | %.1f |\n' "$name" "$threads" "$frames" \
    "$nt" "$mt" "$(median <"$WORK/r")" "$(echo "$nr/1024" | bc -l)" "$(echo "$mr/1024" | bc -l)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
