#!/usr/bin/env bash
# tools/crashgen/samples.sh - build one sample program of tools/crashgen/samples/
# for x86_64 Windows (clang + lld, CodeView PDB), run each of its modes under
# Wine, and put the exe, the PDB and one minidump per mode into
# testdata/<name>/.
#
#   bash tools/crashgen/samples.sh <name> [mode...]
#
# The program is tools/crashgen/samples/<name>.c or <name>.cpp. Two comment
# lines in it drive this script:
#   // crashgen-modes: mode1 mode2 ...      (run when no mode is given)
#   // crashgen-flags: -O2 ...              (extra compile flags; optional)
#   // crashgen-libs: -lstdc++ ...          (extra link flags; optional)
#   // crashgen-out: dirname                (testdata/<dirname>/; default <name>)
# `// crashgen-modes: none` builds the program without running it (a program
# to debug live rather than one that writes dumps).
# Each mode runs as `<name>.exe <mode> <mode>.dmp` from C:\crashgen\<name>\;
# the program writes the dump itself (see samples/crashgen.h) and must exit
# once it is written. Outputs: testdata/<name>/<name>.exe, <name>.pdb,
# <mode>.dmp. Only the files of the modes run are replaced.
#
# Environment: CRASHGEN_TIMEOUT=<s> per run (default 120), CRASHGEN_KEEP=1.
# Needs (Debian packages): wine wine64 clang lld mingw-w64.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TRIPLE=x86_64-w64-mingw32
TIMEOUT="${CRASHGEN_TIMEOUT:-120}"

say() { printf '==> %s\n' "$*"; }
die() {
    printf 'samples: error: %s\n' "$*" >&2
    exit 1
}

[ $# -ge 1 ] || die "usage: samples.sh <name> [mode...]  (programs: $(cd "$HERE/samples" && ls -- *.c *.cpp 2>/dev/null | sed 's/\.c.*//' | tr '\n' ' '))"
NAME="$1"
shift
case "$NAME" in *[!a-z0-9_-]*) die "sample names are lower-case letters, digits, - and _: '$NAME'" ;; esac
SRC=""
for ext in c cpp; do
    [ -f "$HERE/samples/$NAME.$ext" ] && SRC="$HERE/samples/$NAME.$ext"
done
[ -n "$SRC" ] || die "no tools/crashgen/samples/$NAME.c or .cpp"
directive() { sed -n "s|^// crashgen-$1: *||p" "$SRC" | head -n1; }
read -r -a MODES <<<"${*:-$(directive modes)}"
[ ${#MODES[@]} -gt 0 ] || die "$SRC has no '// crashgen-modes:' line and no mode was given"
read -r -a FLAGS <<<"$(directive flags)"
read -r -a LIBS <<<"$(directive libs)"
OUTNAME="$(directive out)"
OUTNAME="${OUTNAME:-$NAME}"
case "$OUTNAME" in *[!a-z0-9_-]*) die "crashgen-out is lower-case letters, digits, - and _: '$OUTNAME'" ;; esac
[ "${MODES[*]}" = none ] && MODES=()

for tool in clang ld.lld timeout; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (apt-get install -y clang lld coreutils)"
done
WINE="$(command -v wine64 || command -v wine)" || die "wine not found (apt-get install -y wine wine64)"
WINESERVER="$(command -v wineserver || echo /usr/lib/wine/wineserver64)"
LIBGCC="$(dirname "$("$TRIPLE-gcc-win32" -print-libgcc-file-name 2>/dev/null || "$TRIPLE-gcc" -print-libgcc-file-name)")" ||
    die "libgcc for $TRIPLE not found (apt-get install -y mingw-w64)"

# shellcheck source=tools/crashgen/wine-prefix.sh
source "$HERE/wine-prefix.sh"
wine_prefix samples

DIR="$WINEPREFIX/drive_c/crashgen/$NAME"
WINDIR="C:\\crashgen\\$NAME"
mkdir -p "$DIR"
cp "$SRC" "$HERE/samples/crashgen.h" "$DIR/"
COMPILER=clang
[ "${SRC##*.}" = cpp ] && COMPILER=clang++
say "building $NAME.exe (${FLAGS[*]:-no extra flags})"
(
    cd "$DIR"
    set -x
    "$COMPILER" --target="$TRIPLE" --sysroot="/usr/$TRIPLE" -g -gcodeview -ffile-compilation-dir=. \
        -Wall -Wextra "${FLAGS[@]}" -c -o "$NAME.o" "$(basename "$SRC")"
    "$COMPILER" --target="$TRIPLE" --sysroot="/usr/$TRIPLE" -fuse-ld=lld -g -L"$LIBGCC" \
        -Wl,--pdb="$NAME.pdb" -Wl,-Xlink=-Brepro \
        "-Wl,-Xlink=-pdbsourcepath:$WINDIR" "-Wl,-Xlink=-pdbaltpath:$WINDIR\\$NAME.pdb" \
        -o "$NAME.exe" "$NAME.o" -ldbghelp "${LIBS[@]}"
)

OUT="$ROOT/testdata/$OUTNAME"
mkdir -p "$OUT"
cp "$DIR/$NAME.exe" "$DIR/$NAME.pdb" "$OUT/"
FAILED=()
for mode in "${MODES[@]+"${MODES[@]}"}"; do
    say "running $NAME.exe $mode"
    rm -f "$DIR/$mode.dmp"
    set +e
    (cd "$DIR" && timeout --kill-after=10 "$TIMEOUT" "$WINE" "$NAME.exe" "$mode" "$mode.dmp") >"$DIR/$mode.log" 2>&1
    rc=$?
    set -e
    sed 's/^/    | /' "$DIR/$mode.log"
    wine_idle
    if [ -s "$DIR/$mode.dmp" ]; then
        cp "$DIR/$mode.dmp" "$OUT/$mode.dmp"
        printf '    wrote testdata/%s/%s.dmp (%s bytes, exit code %s)\n' "$NAME" "$mode" "$(stat -c %s "$DIR/$mode.dmp")" "$rc"
    else
        printf '    FAILED: no dump (exit code %s)\n' "$rc"
        FAILED+=("$mode")
    fi
done
[ ${#FAILED[@]} -eq 0 ] || die "no dump for: ${FAILED[*]}"
say "done: testdata/$OUTNAME/"
