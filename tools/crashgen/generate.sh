#!/usr/bin/env bash
# tools/crashgen/generate.sh - build crashy.exe (tools/crashgen/crashy.c) for
# Windows with clang + lld, crash it under Wine once per mode, and put the
# minidumps, the exe and its PDB into testdata/.
#
#   bash tools/crashgen/generate.sh
#
# Outputs (paths relative to the repository root):
#   testdata/crashy.exe, testdata/crashy.pdb       x64 build (PE32+, CodeView PDB)
#   testdata/crashy-x64-<mode>.dmp                 one minidump per mode
#   testdata/x86/crashy.exe, testdata/x86/crashy.pdb, testdata/x86/crashy-x86-<mode>.dmp
#                                                  only when Wine can run 32-bit programs
#
# Environment:
#   CRASHGEN_TIMEOUT=<s>         per-run timeout (default 120)
#   CRASHGEN_KEEP=1              keep the temporary build dir / Wine prefix
#   CRASHGEN_X86=0               do not try the x86 build
#   CRASHGEN_WINE_I386_DLLS=<d>  a directory holding i386-windows/ntdll.dll etc.
#                                (e.g. extracted from the libwine:i386 .deb, see
#                                README.md); passed to Wine as WINEDLLPATH when
#                                the prefix is made and for the x86 runs
#
# Needs (Debian packages): wine wine64 clang lld mingw-w64 (and python3).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$ROOT/testdata"
MODES=(null divzero stack breakpoint raise thread)
TIMEOUT="${CRASHGEN_TIMEOUT:-120}"
PACKAGES="wine wine64 clang lld mingw-w64"

say() { printf '==> %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
die() {
    printf 'crashgen: error: %s\n' "$*" >&2
    exit 1
}
need_pkgs() {
    die "$1
    Install the Debian packages:  apt-get install -y $PACKAGES"
}

# ---------------------------------------------------------------------------
say "checking tools"

command -v clang >/dev/null 2>&1 || need_pkgs "clang not found"
command -v ld.lld >/dev/null 2>&1 || need_pkgs "ld.lld not found (package lld)"
command -v python3 >/dev/null 2>&1 || die "python3 not found (package python3)"
command -v timeout >/dev/null 2>&1 || die "timeout not found (package coreutils)"

WINE=""
for c in wine64 /usr/lib/wine/wine64 wine; do
    if p="$(command -v "$c" 2>/dev/null)"; then
        WINE="$p"
        break
    fi
done
[ -n "$WINE" ] || need_pkgs "wine64/wine not found"
WINESERVER=""
for c in wineserver64 /usr/lib/wine/wineserver64 wineserver /usr/lib/wine/wineserver; do
    if p="$(command -v "$c" 2>/dev/null)"; then
        WINESERVER="$p"
        break
    fi
done
[ -n "$WINESERVER" ] || need_pkgs "wineserver not found"

# libgcc for a MinGW target: prefer the win32-threads variant (no winpthread).
libgcc_dir() {
    local triple="$1" d f
    for d in /usr/lib/gcc/"$triple"/*-win32 /usr/lib/gcc/"$triple"/*-posix /usr/lib/gcc/"$triple"/*; do
        if [ -f "$d/libgcc.a" ]; then
            echo "$d"
            return 0
        fi
    done
    for c in "$triple-gcc-win32" "$triple-gcc"; do
        if f="$("$c" -print-libgcc-file-name 2>/dev/null)" && [ -f "$f" ]; then
            dirname "$f"
            return 0
        fi
    done
    return 1
}

[ -f /usr/x86_64-w64-mingw32/lib/libdbghelp.a ] ||
    need_pkgs "MinGW-w64 x86_64 sysroot not found (/usr/x86_64-w64-mingw32/lib/libdbghelp.a)"
LIBGCC64="$(libgcc_dir x86_64-w64-mingw32)" ||
    need_pkgs "libgcc for x86_64-w64-mingw32 not found (package gcc-mingw-w64-x86-64, part of mingw-w64)"

note "clang:      $(command -v clang) ($(clang --version | head -n1))"
note "lld:        $(command -v ld.lld)"
note "wine:       $WINE ($("$WINE" --version 2>/dev/null || echo '?'))"
note "wineserver: $WINESERVER"
note "libgcc:     $LIBGCC64"

# ---------------------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/ntdbg-crashgen.XXXXXX")"
export WINEPREFIX="$WORK/prefix"
export WINEARCH=win64
export WINEDEBUG=-all
export WINEDLLOVERRIDES="mscoree,mshtml=" # no Mono / Gecko installer prompts
unset DISPLAY WAYLAND_DISPLAY

cleanup() {
    "$WINESERVER" -k >/dev/null 2>&1 || true
    if [ "${CRASHGEN_KEEP:-0}" = 1 ]; then
        echo "crashgen: kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

# Wait until the wineserver of our prefix has exited, so each run starts
# from a fresh server (stable thread ids, no leftovers).
wine_idle() {
    timeout 60 "$WINESERVER" -w >/dev/null 2>&1 || "$WINESERVER" -k >/dev/null 2>&1 || true
}

# Optional i386 PE DLLs for the x86 build (see below). They must be known
# when the prefix is created, so that C:\windows\syswow64 gets populated.
X86_ENV=()
if [ "${CRASHGEN_X86:-1}" != 0 ] && [ -n "${CRASHGEN_WINE_I386_DLLS:-}" ]; then
    [ -f "$CRASHGEN_WINE_I386_DLLS/i386-windows/ntdll.dll" ] ||
        die "CRASHGEN_WINE_I386_DLLS=$CRASHGEN_WINE_I386_DLLS has no i386-windows/ntdll.dll"
    X86_ENV+=("WINEDLLPATH=$CRASHGEN_WINE_I386_DLLS")
fi

say "creating Wine prefix $WINEPREFIX"
env "${X86_ENV[@]}" timeout 300 "$WINE" wineboot -i >"$WORK/wineboot.log" 2>&1 ||
    die "wineboot failed, see $WORK/wineboot.log (set CRASHGEN_KEEP=1 to keep it)"
# Report a current Windows version (Wine 8 defaults to Windows 7).
timeout 60 "$WINE" reg add 'HKCU\Software\Wine' /v Version /t REG_SZ /d win10 /f >/dev/null 2>&1 ||
    note "could not set the Windows version to win10 (continuing)"
wine_idle
note "prefix ready"

# ---------------------------------------------------------------------------
# build <triple> <dir inside drive_c> <windows dir>
# Builds <dir>/crashy.exe + crashy.pdb. The source is compiled in the build
# directory with a relative name, and lld rewrites the paths recorded in the
# PDB / exe to <windows dir> (C:\crashgen...), so the output does not depend
# on where the repository or the temp dir is. /Brepro makes the build
# reproducible (TimeDateStamp = hash of the output, as with MSVC /Brepro).
build() {
    local triple="$1" dir="$2" windir="$3" libgcc="$4"
    mkdir -p "$dir"
    cp "$HERE/crashy.c" "$dir/crashy.c"
    say "building $triple -> $windir\\crashy.exe"
    (
        cd "$dir"
        set -x
        clang --target="$triple" --sysroot="/usr/$triple" -O1 -g -gcodeview \
            -ffile-compilation-dir=. -Wall -Wextra -Wno-infinite-recursion \
            -c -o crashy.o crashy.c
        clang --target="$triple" --sysroot="/usr/$triple" -fuse-ld=lld -g \
            -L"$libgcc" \
            -Wl,--pdb=crashy.pdb \
            -Wl,-Xlink=-Brepro \
            "-Wl,-Xlink=-pdbsourcepath:$windir" \
            "-Wl,-Xlink=-pdbaltpath:$windir\\crashy.pdb" \
            -o crashy.exe crashy.o -ldbghelp
    )
    [ -f "$dir/crashy.exe" ] && [ -f "$dir/crashy.pdb" ] || die "build for $triple produced no exe/pdb"
}

# run_modes <arch> <dir> <output dir> <extra env...>
# Runs every mode from <dir> (so the exe is C:\crashgen...\crashy.exe inside
# Wine) and copies the dumps to <output dir>/crashy-<arch>-<mode>.dmp.
FAILED=()
SKIPPED=()
# Runs known not to work, with the reason. They are still attempted; a
# failure is reported but does not fail the script.
known_failure() {
    case "$1" in
    x86/breakpoint)
        echo "Wine 8.0 experimental WoW64: int3 in 32-bit code ends in 'nested exception on signal stack'; the process exits without running any handler"
        ;;
    *) return 1 ;;
    esac
}
run_modes() {
    local arch="$1" dir="$2" outdir="$3"
    shift 3
    local mode rc dump
    for mode in "${MODES[@]}"; do
        dump="$dir/$mode.dmp"
        rm -f "$dump"
        say "running crashy.exe $mode ($arch)"
        set +e
        (cd "$dir" && env "$@" timeout --kill-after=10 "$TIMEOUT" "$WINE" crashy.exe "$mode" "$mode.dmp") \
            >"$dir/$mode.log" 2>&1
        rc=$?
        set -e
        sed 's/^/    | /' "$dir/$mode.log"
        wine_idle
        if [ "$rc" -ne 0 ] || [ ! -s "$dump" ]; then
            if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
                note "FAILED: timed out after ${TIMEOUT}s"
            else
                note "FAILED: exit code $rc, dump $([ -s "$dump" ] && echo present || echo missing)"
            fi
            if why="$(known_failure "$arch/$mode")"; then
                note "known problem, not counted: $why"
                SKIPPED+=("$arch/$mode")
            else
                FAILED+=("$arch/$mode")
            fi
        else
            cp "$dump" "$outdir/crashy-$arch-$mode.dmp"
            note "wrote ${outdir#"$ROOT"/}/crashy-$arch-$mode.dmp ($(stat -c %s "$dump") bytes)"
        fi
    done
}

mkdir -p "$OUT"
CHECK_ARGS=()

# ---------------------------------------------------------------------------
# x64
DIR64="$WINEPREFIX/drive_c/crashgen"
build x86_64-w64-mingw32 "$DIR64" 'C:\crashgen' "$LIBGCC64"
rm -f "$OUT"/crashy-x64-*.dmp "$OUT/crashy.exe" "$OUT/crashy.pdb"
cp "$DIR64/crashy.exe" "$DIR64/crashy.pdb" "$OUT/"
run_modes x64 "$DIR64" "$OUT"
CHECK_ARGS+=("$OUT"/crashy-x64-*.dmp)

# ---------------------------------------------------------------------------
# x86 (optional): needs Wine's 32-bit side. Debian's wine64 8.0 can run
# 32-bit programs in its "experimental WoW64" mode when the i386 PE DLLs are
# found (installed libwine:i386, or CRASHGEN_WINE_I386_DLLS).
if [ "${CRASHGEN_X86:-1}" = 0 ]; then
    say "x86: skipped (CRASHGEN_X86=0)"
elif [ ! -f /usr/i686-w64-mingw32/lib/libdbghelp.a ] || ! LIBGCC32="$(libgcc_dir i686-w64-mingw32)"; then
    say "x86: skipped (no i686-w64-mingw32 sysroot/libgcc; package mingw-w64)"
else
    DIR32="$WINEPREFIX/drive_c/crashgen/x86"
    build i686-w64-mingw32 "$DIR32" 'C:\crashgen\x86' "$LIBGCC32"
    say "x86: probing whether Wine runs 32-bit programs here"
    set +e
    (cd "$DIR32" && env "${X86_ENV[@]}" timeout 60 "$WINE" crashy.exe) >"$WORK/probe32.log" 2>&1
    rc=$?
    set -e
    wine_idle
    if [ "$rc" -ne 2 ]; then
        say "x86: skipped: Wine could not run the 32-bit crashy.exe (exit code $rc; expected 2 = usage)"
        note "To enable it, give Wine the i386 PE DLLs, e.g.:"
        note "  dpkg --add-architecture i386; apt-get update; apt-get download libwine:i386"
        note "  dpkg-deb -x libwine_*_i386.deb /tmp/libwine-i386"
        note "  dpkg --remove-architecture i386; apt-get update"
        note "  CRASHGEN_WINE_I386_DLLS=/tmp/libwine-i386/usr/lib/i386-linux-gnu/wine bash $0"
        note "(existing testdata/x86 files, if any, were left alone)"
    else
        note "yes"
        mkdir -p "$OUT/x86"
        rm -f "$OUT"/x86/crashy-x86-*.dmp "$OUT/x86/crashy.exe" "$OUT/x86/crashy.pdb"
        cp "$DIR32/crashy.exe" "$DIR32/crashy.pdb" "$OUT/x86/"
        run_modes x86 "$DIR32" "$OUT/x86" "${X86_ENV[@]}"
        CHECK_ARGS+=("$OUT"/x86/crashy-x86-*.dmp)
    fi
fi

# ---------------------------------------------------------------------------
say "checking the dumps (tools/crashgen/check_dumps.py)"
set +e
python3 "$HERE/check_dumps.py" "${CHECK_ARGS[@]}"
check_rc=$?
set -e

say "testdata/ now holds:"
(cd "$ROOT" && find testdata -maxdepth 2 -type f \( -name 'crashy*' \) -printf '    %-40p %10s bytes\n' | sort)
note "total: $(du -sh "$OUT" | cut -f1)"

if [ ${#SKIPPED[@]} -gt 0 ]; then
    say "no dump (known problems): ${SKIPPED[*]}"
fi
if [ ${#FAILED[@]} -gt 0 ]; then
    die "these runs failed: ${FAILED[*]}"
fi
[ "$check_rc" -eq 0 ] || die "check_dumps.py reported problems"
say "done"
