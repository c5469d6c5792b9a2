#!/usr/bin/env bash
# ntdbg analyze --json vs minidump-stackwalk --json on the same dumps and the same Breakpad
# symbols, run alternately in one script: median wall time and peak RSS of N runs each: the
# small upstream dumps, both Firefox dumps and a full-memory Wine dump.
#
# usage: bench/vs-stackwalk.sh [RUNS] [NTDBG]   (NTDBG default target/release/ntdbg; minidump-stackwalk on PATH:
#        cargo build --release; cargo install --locked minidump-stackwalk)
set -euo pipefail
# shellcheck source=bench/firefox-setup.sh
source "$(dirname "$0")/firefox-setup.sh" "$@"
RUNS=$PAIRS
FF_SYMS=$FF_PLAIN

cases=(
  "breakpad minidump2|$T/google-breakpad/src/processor/testdata/minidump2.dmp|$T/google-breakpad/src/processor/testdata/symbols"
  "symbolic mini (crash.sym)|$T/getsentry-symbolic/symbolic-testutils/fixtures/windows/mini.dmp|$WORK/mini-syms"
  "firefox x86_64|$T/mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-x86_64.dmp|$FF_SYMS"
  "firefox aarch64|$T/mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-aarch64.dmp|$FF_SYMS"
  "lldb sigsegv (no symbols)|$T/llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs/sigsegv.dmp|$WORK/empty"
  "winelab x64 full memory, 32 MiB (no symbols)|$WORK/null.inproc-full.dmp|$WORK/empty"
)
# The full-memory Wine dump is kept xz-compressed. Wine writes no CodeView records, so no
# Breakpad file can match its modules: both tools run without symbols.
xz -dc "$T/winelab/x64/null.inproc-full.dmp.xz" >"$WORK/null.inproc-full.dmp"
mkdir -p "$WORK/empty" "$WORK/mini-syms/crash.pdb/3249D99D0C4049318610F4E4FB0B69361"
cp "$T/getsentry-symbolic/symbolic-testutils/fixtures/windows/crash.sym" \
   "$WORK/mini-syms/crash.pdb/3249D99D0C4049318610F4E4FB0B69361/crash.sym"


printf '| dump | ntdbg median s | minidump-stackwalk median s | ratio (msw/ntdbg) | ntdbg peak RSS MiB | msw peak RSS MiB |\n|---|---|---|---|---|---|\n'
for c in "${cases[@]}"; do
  IFS='|' read -r name dump syms <<<"$c"
  : >"$WORK/n"; : >"$WORK/m"
  for _ in $(seq "$RUNS"); do
    measure "$NTDBG" analyze "$dump" --json --offline --symbols "$syms" >>"$WORK/n"
    measure "$MSW" --json --features stable-all "$dump" "$syms" >>"$WORK/m"
  done
  nt=$(cut -d' ' -f1 "$WORK/n" | median); mt=$(cut -d' ' -f1 "$WORK/m" | median)
  nr=$(cut -d' ' -f2 "$WORK/n" | median); mr=$(cut -d' ' -f2 "$WORK/m" | median)
  ratio=$(awk -v a="$mt" -v b="$nt" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
  printf '| %s | %.3f | %.3f | %s | %.1f | %.1f |\n' "$name" "$nt" "$mt" "$ratio" "$(echo "$nr/1024" | bc -l)" "$(echo "$mr/1024" | bc -l)"
done
