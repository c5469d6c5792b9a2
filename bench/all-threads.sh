#!/usr/bin/env bash
# Every thread's stack: `ntdbg run DUMP -c "~*k" --json` against `minidump-stackwalk --json`
# on the same dumps and the same Breakpad symbols, the two run alternately in one script:
# median wall time, the median of the per-pair ratios ntdbg/msw, and median peak RSS.
#
# ntdbg reads the Firefox symbols as plain `.sym` (the decompressed copies minidump-stackwalk
# also gets) or as `.sym.xz`, with one of three symbol caches: `cold`, emptied before every run
# (the first run: read, decompress, and leave the warm symbol index to a detached writer, whose
# end is awaited outside the timing);
# `warm`, kept from a first run (the index is mapped, nothing parsed); `noindex`, kept from a
# first run with NTDBG_SYMBOL_INDEX=off (no index: plain `.sym` parsed, `.sym.xz` parsed from
# its decompressed copy, as before the index). The winelab crashy rows load crashy.pdb (PDB
# converted on the first run, indexed on later ones). minidump-stackwalk reads the plain `.sym`
# files in every row.
#
# usage: bench/all-threads.sh [PAIRS] [NTDBG]   (PAIRS default 11; NTDBG default
#        target/release/ntdbg; needs minidump-stackwalk on PATH; ROWS=REGEX runs only the
#        rows whose name matches, e.g. ROWS='x86_64, plain')
set -euo pipefail
# shellcheck source=bench/firefox-setup.sh
source "$(dirname "$0")/firefox-setup.sh" "$@"
mkdir -p "$WORK/empty"
xz -dc "$T/winelab/x64/null.inproc-full.dmp.xz" >"$WORK/null.inproc-full.dmp"

# name|dump|symbols for ntdbg|symbols for msw|symbol cache (cold, warm or noindex)
WL=$T/winelab/x64
cases=(
  "breakpad minidump2 (2 thr)|$T/google-breakpad/src/processor/testdata/minidump2.dmp|$T/google-breakpad/src/processor/testdata/symbols|$T/google-breakpad/src/processor/testdata/symbols|cold"
  "winelab x64 stack.inproc, deep recursion (no symbols)|$T/winelab/x64/stack.inproc.dmp|$WORK/empty|$WORK/empty|cold"
  "winelab x64 full memory 32 MiB (no symbols)|$WORK/null.inproc-full.dmp|$WORK/empty|$WORK/empty|cold"
  "winelab x64 crashy null.inproc, crashy.pdb, first run|$WL/null.inproc.dmp|$WL|$WORK/empty|cold"
  "winelab x64 crashy null.inproc, crashy.pdb, index off|$WL/null.inproc.dmp|$WL|$WORK/empty|noindex"
  "winelab x64 crashy null.inproc, crashy.pdb, warm index|$WL/null.inproc.dmp|$WL|$WORK/empty|warm"
)
for arch in x86_64 aarch64; do
  d=$FF/minidumps/windows-$arch.dmp
  cases+=(
    "firefox $arch, plain .sym, index off|$d|$FF_PLAIN|$FF_PLAIN|noindex"
    "firefox $arch, plain .sym, first run|$d|$FF_PLAIN|$FF_PLAIN|cold"
    "firefox $arch, plain .sym, warm index|$d|$FF_PLAIN|$FF_PLAIN|warm"
    "firefox $arch, .sym.xz, first run|$d|$FF_XZ|$FF_PLAIN|cold"
    "firefox $arch, .sym.xz, index off (decompressed copy)|$d|$FF_XZ|$FF_PLAIN|noindex"
    "firefox $arch, .sym.xz, warm index|$d|$FF_XZ|$FF_PLAIN|warm"
  )
done

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
  [[ "$name" =~ ${ROWS:-.} ]] || continue
  read -r threads frames < <(shape "$dump" "$msyms")
  : >"$WORK/n"; : >"$WORK/m"; : >"$WORK/r"
  index=on; [ "$cache" = noindex ] && index=off
  dir=$WORK/cache; rm -rf "$dir"; mkdir -p "$dir"
  [ "$cache" != cold ] && NTDBG_SYMBOL_INDEX=$index NTDBG_SYMBOL_INDEX_WRITER=thread NTDBG_SYMBOL_CACHE=$dir "$NTDBG" run "$dump" -c '~*k' --json --offline --symbols "$nsyms" >/dev/null 2>&1
  for _ in $(seq "$PAIRS"); do
    if [ "$cache" = cold ]; then rm -rf "$dir"; mkdir -p "$dir"; fi
    n=$(NTDBG_SYMBOL_INDEX=$index NTDBG_SYMBOL_CACHE=$dir measure "$NTDBG" run "$dump" -c '~*k' --json --offline --symbols "$nsyms")
    wait_for_index_writer
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
