#!/usr/bin/env bash
# The floor under a `.sym.xz` first run: how long decoding the `.sym.xz` files an all-thread
# walk needs takes on one core and on two, against minidump-stackwalk's whole run on the
# decompressed files, in one script (each pair runs msw, then every decoder, then ntdbg's
# first run, alternately; ratios are medians of the per-pair ratios to that pair's msw time).
# Both wall time and CPU time (user + system) are given: on a machine shared with other work
# the CPU time is the steadier figure, and the wall time shows what a second core gave.
#
# The files are the ones `ntdbg run DUMP -c "~*k;lm"` reports as loaded ("breakpad symbols").
# Decoders: `xz -dc` over all the files in one process (one core) and two processes at once
# (`xargs -P2`, two cores); liblzma in-process, the system's through Python's `lzma` (which
# releases the GIL while decoding), on one thread and on two (timed inside the process, so
# without interpreter start-up); ntdbg's own first run (`~*k --json`, symbol cache emptied
# before each run, the detached index writer awaited outside the timing), as in
# bench/all-threads.sh.
#
# usage: bench/xz-floor.sh [PAIRS] [NTDBG]   (PAIRS default 11; NTDBG default
#        target/release/ntdbg; needs minidump-stackwalk, xz and python3 on PATH)
set -euo pipefail
# shellcheck source=bench/firefox-setup.sh
source "$(dirname "$0")/firefox-setup.sh" "$@"

# One run of CMD…: wall seconds and CPU seconds (user + system, children included).
timed() {
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f "%U %S" "$@" >/dev/null 2>"$WORK/time" || true
  end=$(date +%s.%N)
  echo "$(echo "$end - $start" | bc -l) $(tail -1 "$WORK/time" | awk '{print $1 + $2}')"
}

# Decodes the files named on stdin with liblzma in this process on THREADS threads; prints
# the wall and CPU seconds of the decoding alone.
cat >"$WORK/lzma.py" <<'EOF'
import concurrent.futures, lzma, sys, time
files = [open(p.strip(), "rb").read() for p in sys.stdin if p.strip()]
with concurrent.futures.ThreadPoolExecutor(int(sys.argv[1])) as pool:
    start, cpu = time.perf_counter(), time.process_time()
    sum(pool.map(lambda b: len(lzma.decompress(b)), files))
    print("%.6f %.6f" % (time.perf_counter() - start, time.process_time() - cpu))
EOF

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores); $PAIRS pairs per dump; xz $(xz --version | head -1 | awk '{print $NF}')"
printf '| dump | files, xz MB → text MB | msw median s (CPU s) | decoder | median s | ratio to msw | CPU median s | CPU ratio to msw |\n|---|---|---|---|---|---|---|---|\n'
for arch in x86_64 aarch64; do
  dump=$FF/minidumps/windows-$arch.dmp
  cache=$WORK/cache; rm -rf "$cache"; mkdir -p "$cache"
  NTDBG_SYMBOL_CACHE=$cache "$NTDBG" run "$dump" -c '~*k;lm' --offline --symbols "$FF_XZ" 2>/dev/null |
    grep -o '(breakpad symbols) *[^ ]*\.sym\.xz' | awk '{print $NF}' | sort -u >"$WORK/files"
  wait_for_index_writer
  mapfile -t files <"$WORK/files"
  xz_mb=$(cat "${files[@]}" | wc -c); text_mb=$(xz -dc "${files[@]}" | wc -c)
  rows=(msw "xz -dc, 1 process" "xz -dc, 2 processes" "liblzma in-process, 1 thread" "liblzma in-process, 2 threads" "ntdbg .sym.xz first run")
  for r in "${!rows[@]}"; do : >"$WORK/t$r"; : >"$WORK/r$r"; : >"$WORK/c$r"; : >"$WORK/q$r"; done
  for _ in $(seq "$PAIRS"); do
    t=("$(timed "$MSW" --json --features stable-all "$dump" "$FF_PLAIN")")
    t+=("$(timed xz -dc "${files[@]}")")
    t+=("$(timed sh -c 'printf "%s\n" "$@" | xargs -P2 -n1 xz -dc' sh "${files[@]}")")
    t+=("$(python3 "$WORK/lzma.py" 1 <"$WORK/files")")
    t+=("$(python3 "$WORK/lzma.py" 2 <"$WORK/files")")
    rm -rf "$cache"; mkdir -p "$cache"
    t+=("$(NTDBG_SYMBOL_CACHE=$cache timed "$NTDBG" run "$dump" -c '~*k' --json --offline --symbols "$FF_XZ")")
    wait_for_index_writer
    read -r mw mc <<<"${t[0]}"
    for r in "${!rows[@]}"; do
      read -r w c <<<"${t[$r]}"
      echo "$w" >>"$WORK/t$r"; echo "$c" >>"$WORK/c$r"
      awk -v a="$w" -v b="$mw" 'BEGIN { printf "%.4f\n", a / b }' >>"$WORK/r$r"
      awk -v a="$c" -v b="$mc" 'BEGIN { printf "%.4f\n", a / b }' >>"$WORK/q$r"
    done
  done
  for r in "${!rows[@]}"; do
    [ "$r" = 0 ] && continue
    printf '| %s | %d, %.1f → %.1f | %.3f (%.3f) | %s | %.3f | %.2f | %.3f | %.2f |\n' "$arch" \
      "${#files[@]}" "$(echo "$xz_mb/1000000" | bc -l)" "$(echo "$text_mb/1000000" | bc -l)" \
      "$(median <"$WORK/t0")" "$(median <"$WORK/c0")" "${rows[$r]}" "$(median <"$WORK/t$r")" \
      "$(median <"$WORK/r$r")" "$(median <"$WORK/c$r")" "$(median <"$WORK/q$r")"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
