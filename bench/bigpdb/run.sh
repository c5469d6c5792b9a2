#!/usr/bin/env bash
# The big-PDB benchmark: generates a C++ program (bench/bigpdb/gen.py: FUNCTIONS functions,
# each with its own struct type and an 8-deep __forceinline chain), builds it with Debian's
# clang (--target=x86_64-pc-windows-msvc, CodeView) and lld-link /debug into big.exe +
# big.pdb, picks 50 addresses inside inlined code (a fake stack), and symbolizes them with
# ntdbg (the hidden `ntdbg symbolize-image EXE`: loads the module's symbols as a session
# does, then looks the addresses up) and with `llvm-symbolizer --obj=big.exe -f -i`.
# Prints the PDB's size, each tool's wall time and peak RSS (median of RUNS fresh processes,
# run alternately) and whether both give the same frames. ntdbg is timed cold (an empty
# symbol cache each run: the first symbolization) and warm (the cache holding the index the
# cold run left, written by the run itself or by the helper it started).
#
# Usage: bash bench/bigpdb/run.sh [FUNCTIONS=20000] [RUNS=5]
# NTDBG=/path/to/ntdbg times that binary instead of building this checkout's release one.
# The build is kept in ${BIGPDB_DIR:-/tmp/ntdbg-bigpdb-FUNCTIONS} for later runs; delete it.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
functions="${1:-20000}"
runs="${2:-5}"
dir="${BIGPDB_DIR:-/tmp/ntdbg-bigpdb-$functions}"
target="${CARGO_TARGET_DIR:-$here/target}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
source "$here/bench/measure.sh"

if [ ! -f "$dir/big.pdb" ]; then
    mkdir -p "$dir/src"
    python3 "$here/bench/bigpdb/gen.py" "$dir/src" "$functions"
    # -O0: __forceinline still inlines (the always-inliner), and the build stays fast.
    ls "$dir"/src/*.cpp | xargs -P "$(nproc)" -I{} sh -c \
        'clang --target=x86_64-pc-windows-msvc -O0 -g -gcodeview -fno-exceptions -c "$1" -o "${1%.cpp}.obj"' _ {}
    lld-link /debug /entry:entry /nodefaultlib /subsystem:console /opt:noref /opt:noicf \
        /out:"$dir/big.exe" /pdb:"$dir/big.pdb" "$dir"/src/*.obj
    rm -f "$dir"/src/*.obj
fi
echo "big.exe: $(stat -c %s "$dir/big.exe") bytes, big.pdb: $(stat -c %s "$dir/big.pdb") bytes"

# 50 addresses in inlined code: candidate offsets into 50 functions spread over the PDB,
# kept where llvm-symbolizer reports at least three frames.
if [ ! -f "$dir/addresses.txt" ]; then
    text_va=$(llvm-objdump -h "$dir/big.exe" | awk '$2 == ".text" { print $4; exit }')
    llvm-pdbutil dump --publics "$dir/big.pdb" \
        | awk '/S_PUB32 .*`\?f[0-9]+@@YAHH@Z`/ { getline; sub(/.*addr = 0001:/, ""); print }' \
        | sort -n | awk -v n=50 '{ a[NR] = $1 } END { for (i = 1; i <= n; i++) print a[int((i - 0.5) * NR / n) + 1] }' \
        > "$WORK/offsets"
    while read -r off; do
        for d in 100 140 180 220 260; do printf '0x%x\n' $((0x$text_va + off + d)); done
    done < "$WORK/offsets" > "$WORK/candidates"
    llvm-symbolizer --obj="$dir/big.exe" -f -i < "$WORK/candidates" > "$WORK/candidate-frames"
    python3 - "$WORK/candidates" "$WORK/candidate-frames" > "$dir/addresses.txt" <<'PY'
import sys
addrs = open(sys.argv[1]).read().split()
blocks = open(sys.argv[2]).read().strip("\n").split("\n\n")
picked, seen = [], set()
for a, b in zip(addrs, blocks):
    frames = b.count("\n") // 2 + 1
    outer = b.strip().split("\n")[-2]
    if frames >= 3 and outer not in seen:
        seen.add(outer)
        picked.append(a)
print("\n".join(picked[:50]))
PY
fi
echo "addresses: $(wc -l < "$dir/addresses.txt") (in inlined code, one per function)"

if [ -z "${NTDBG:-}" ]; then
    (cd "$here" && cargo build --release -q -p ntdbg-cli)
fi
ntdbg=("${NTDBG:-$target/release/ntdbg}" symbolize-image "$dir/big.exe")
llvm=(llvm-symbolizer --obj="$dir/big.exe" -f -i)

# Same frames? Names compared without parameter lists (ntdbg prints `f(int)` for every
# function; llvm-symbolizer only for the outermost), paths and lines as printed.
NTDBG_SYMBOL_CACHE="$WORK/warm" "${ntdbg[@]}" < "$dir/addresses.txt" > "$WORK/ntdbg.txt"
# The warm index: written before exit, or by a detached helper (waited for, up to two
# minutes, also after each cold run: its CPU time must not land on the next measurement).
helpers() { for _ in $(seq 240); do pgrep -f "__symbol-index pdb $dir/big.pdb" > /dev/null || break; sleep 0.5; done; }
helpers
ls "$WORK"/warm/index/*.idx > /dev/null 2>&1 || echo "no warm index was written"
"${llvm[@]}" < "$dir/addresses.txt" > "$WORK/llvm.txt"
strip() { sed -E 's/\(.*\)$//; s/:([0-9]+):[0-9]+$/:\1/' "$1"; }
if diff <(strip "$WORK/ntdbg.txt") <(strip "$WORK/llvm.txt") > "$WORK/diff"; then
    echo "frames: identical ($(grep -c . "$WORK/ntdbg.txt") lines; names without parameters)"
else
    echo "frames: DIFFER"; head -20 "$WORK/diff"
fi

: > "$WORK/ntdbg.m"; : > "$WORK/warm.m"; : > "$WORK/llvm.m"
for ((i = 0; i < runs; i++)); do
    measure env NTDBG_SYMBOL_CACHE="$WORK/cold-$i" sh -c "exec \"\$@\" < '$dir/addresses.txt'" _ "${ntdbg[@]}" >> "$WORK/ntdbg.m"
    helpers
    measure env NTDBG_SYMBOL_CACHE="$WORK/warm" sh -c "exec \"\$@\" < '$dir/addresses.txt'" _ "${ntdbg[@]}" >> "$WORK/warm.m"
    measure sh -c "exec \"\$@\" < '$dir/addresses.txt'" _ "${llvm[@]}" >> "$WORK/llvm.m"
done
col() { awk -v c="$2" '{print $c}' "$WORK/$1.m" | median; }
nt=$(col ntdbg 1); wt=$(col warm 1); lt=$(col llvm 1)
nr=$(col ntdbg 2); wr=$(col warm 2); lr=$(col llvm 2)
printf 'ntdbg cold:      %.3f s, peak RSS %d MiB\n' "$nt" $((nr / 1024))
printf 'ntdbg warm:      %.3f s, peak RSS %d MiB\n' "$wt" $((wr / 1024))
printf 'llvm-symbolizer: %.3f s, peak RSS %d MiB\n' "$lt" $((lr / 1024))
echo "ratio ntdbg / llvm-symbolizer (median wall): cold $(echo "$nt / $lt" | bc -l | cut -c1-5), warm $(echo "$wt / $lt" | bc -l | cut -c1-5)  (load $(cut -d' ' -f1 /proc/loadavg))"
