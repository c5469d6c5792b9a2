#!/usr/bin/env bash
# tools/crashgen/generate-unwind.sh - the dumps of stacks without unwind data
# (testdata/unwind/): samples/unwind.c for x64 through samples.sh (JIT code in
# VirtualAlloc memory, a leaf whose image the tests leave off the symbol
# path), then unwind_throw.cpp for x86 with i686-w64-mingw32 g++ (a C++ throw
# unwound by DWARF .eh_frame), run under Wine's 32-bit side.
#
#   CRASHGEN_WINE_I386_DLLS=<dir> bash tools/crashgen/generate-unwind.sh [x64|x86]
#
# The x86 part needs Wine's i386 PE DLLs (see "Optional: the x86 build" in
# tools/crashgen/README.md) and the Debian package g++-mingw-w64-i686-win32.
# Outputs: testdata/unwind/unwind.exe, unwind.pdb, jit_callback.dmp,
# jit_fault.dmp, leaf_no_image.dmp (x64); unwind_throw.exe, unwind_throw.pdb,
# throw_noexcept.dmp (x86). Only the files of the part run are replaced.
#
# Environment: CRASHGEN_TIMEOUT=<s> per run (default 120), CRASHGEN_KEEP=1.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$ROOT/testdata/unwind"
TIMEOUT="${CRASHGEN_TIMEOUT:-120}"
PART="${1:-all}"

say() { printf '==> %s\n' "$*"; }
die() {
    printf 'generate-unwind: error: %s\n' "$*" >&2
    exit 1
}

case "$PART" in all | x64 | x86) ;; *) die "usage: generate-unwind.sh [x64|x86]" ;; esac

if [ "$PART" != x86 ]; then
    bash "$HERE/samples.sh" unwind
fi
[ "$PART" != x64 ] || exit 0

# ---------------------------------------------------------------------------
# x86: g++ (GCC's DWARF-2 exception model) and GNU ld, which writes a PDB of
# the public symbols (binutils 2.40 and later), so frames have names.
TRIPLE=i686-w64-mingw32
CXX="$(command -v "$TRIPLE-g++-win32" || command -v "$TRIPLE-g++")" ||
    die "$TRIPLE-g++ not found (apt-get install -y g++-mingw-w64-i686-win32)"
I386="${CRASHGEN_WINE_I386_DLLS:-}"
[ -n "$I386" ] && [ -f "$I386/i386-windows/ntdll.dll" ] ||
    die "CRASHGEN_WINE_I386_DLLS must name a directory holding i386-windows/ntdll.dll (README: 'Optional: the x86 build')"
WINE="$(command -v wine64 || command -v wine)" || die "wine not found (apt-get install -y wine wine64)"
WINESERVER="$(command -v wineserver || echo /usr/lib/wine/wineserver64)"

export WINEDLLPATH="$I386"
# shellcheck source=tools/crashgen/wine-prefix.sh
source "$HERE/wine-prefix.sh"
wine_prefix generate-unwind

NAME=unwind_throw
DIR="$WINEPREFIX/drive_c/crashgen/unwind"
WINDIR='C:\crashgen\unwind'
mkdir -p "$DIR/samples"
cp "$HERE/$NAME.cpp" "$DIR/"
cp "$HERE/samples/crashgen.h" "$DIR/samples/"
say "building $NAME.exe (x86, g++ -O1, DWARF unwinding)"
(
    cd "$DIR"
    set -x
    "$CXX" -O1 -Wall -Wextra -ffile-prefix-map="$DIR"=. -c -o "$NAME.o" "$NAME.cpp"
    "$CXX" -static -Wl,--strip-debug -Wl,--pdb="$NAME.pdb" -Wl,--no-insert-timestamp \
        -o "$NAME.exe" "$NAME.o" -ldbghelp
)
mkdir -p "$OUT"
cp "$DIR/$NAME.exe" "$DIR/$NAME.pdb" "$OUT/"
mode=throw_noexcept
say "running $NAME.exe $mode"
rm -f "$DIR/$mode.dmp"
set +e
(cd "$DIR" && timeout --kill-after=10 "$TIMEOUT" "$WINE" "$NAME.exe" "$mode" "$mode.dmp") >"$DIR/$mode.log" 2>&1
rc=$?
set -e
sed 's/^/    | /' "$DIR/$mode.log"
wine_idle
[ -s "$DIR/$mode.dmp" ] || die "no dump for $mode (exit code $rc)"
cp "$DIR/$mode.dmp" "$OUT/$mode.dmp"
printf '    wrote testdata/unwind/%s.dmp (%s bytes, exit code %s)\n' "$mode" "$(stat -c %s "$DIR/$mode.dmp")" "$rc"
say "done: testdata/unwind/"
