#!/usr/bin/env bash
# tools/crashgen/generate-locals.sh - build locals.exe (tools/crashgen/locals.c)
# with clang + lld (CodeView PDB) at -O0 and -O2, crash each build once under
# Wine and put the exe, the PDB and the minidump into testdata/locals/<variant>/.
#
#   bash tools/crashgen/generate-locals.sh
#
# Variants: x64-O0, x64-O2 (x86 needs Wine's 32-bit DLLs, see README.md; set
# CRASHGEN_WINE_I386_DLLS as for generate.sh to add x86-O0 and x86-O2).
# The crashy.exe samples of generate.sh are not touched.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$ROOT/testdata/locals"
WINE="$(command -v wine64 || command -v wine)"
WINESERVER="$(command -v wineserver || echo /usr/lib/wine/wineserver64)"

say() { printf '==> %s\n' "$*"; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/ntdbg-locals.XXXXXX")"
export WINEPREFIX="$WORK/prefix" WINEARCH=win64 WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
unset DISPLAY WAYLAND_DISPLAY
trap '"$WINESERVER" -k >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
X86_ENV=()
[ -n "${CRASHGEN_WINE_I386_DLLS:-}" ] && X86_ENV+=("WINEDLLPATH=$CRASHGEN_WINE_I386_DLLS")

say "creating Wine prefix"
env "${X86_ENV[@]}" timeout 300 "$WINE" wineboot -i >"$WORK/wineboot.log" 2>&1
timeout 60 "$WINESERVER" -w || true

# variant <triple> <arch> <opt>: build, run, copy to testdata/locals/<arch>-<opt>/.
variant() {
    local triple="$1" arch="$2" opt="$3" libgcc
    libgcc="$(dirname "$("$triple-gcc-win32" -print-libgcc-file-name 2>/dev/null || "$triple-gcc" -print-libgcc-file-name)")"
    local name="$arch-$opt" dir="$WINEPREFIX/drive_c/crashgen/locals/$arch-$opt"
    local windir="C:\\crashgen\\locals\\$arch-$opt"
    mkdir -p "$dir"
    cp "$HERE/locals.c" "$dir/locals.c"
    say "building $name"
    (
        cd "$dir"
        clang --target="$triple" --sysroot="/usr/$triple" "-$opt" -g -gcodeview \
            -ffile-compilation-dir=. -Wall -Wextra -c -o locals.o locals.c
        clang --target="$triple" --sysroot="/usr/$triple" -fuse-ld=lld -g -L"$libgcc" \
            -Wl,--pdb=locals.pdb -Wl,-Xlink=-Brepro \
            "-Wl,-Xlink=-pdbsourcepath:$windir" "-Wl,-Xlink=-pdbaltpath:$windir\\locals.pdb" \
            -o locals.exe locals.o -ldbghelp
    )
    say "running $name"
    (cd "$dir" && env "${X86_ENV[@]}" timeout 120 "$WINE" locals.exe locals.dmp) || true
    timeout 60 "$WINESERVER" -w || true
    [ -s "$dir/locals.dmp" ] || { echo "no dump for $name" >&2; return 1; }
    mkdir -p "$OUT/$name"
    cp "$dir/locals.exe" "$dir/locals.pdb" "$dir/locals.dmp" "$OUT/$name/"
}

variant x86_64-w64-mingw32 x64 O0
variant x86_64-w64-mingw32 x64 O2
if [ -n "${CRASHGEN_WINE_I386_DLLS:-}" ]; then
    variant i686-w64-mingw32 x86 O0
    variant i686-w64-mingw32 x86 O2
fi
say "testdata/locals now holds:"
find "$OUT" -type f -printf '    %p %s bytes\n' | sort
