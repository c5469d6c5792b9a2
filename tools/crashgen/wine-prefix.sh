# tools/crashgen/wine-prefix.sh - sourced by the crashgen scripts: a throw-away Wine prefix.
#
#   wine_prefix <tag>
#
# Needs WINE, WINESERVER and the functions say and die. Makes WORK (a fresh temporary folder,
# removed at exit unless CRASHGEN_KEEP=1) holding the prefix, exports WINEPREFIX and Wine's
# quiet settings, defines wine_idle (waits until the prefix's wineserver has exited) and
# creates the prefix (Windows 10). A WINEDLLPATH in the environment (Wine's i386 DLLs) is used
# from the prefix's creation on.
wine_prefix() {
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/ntdbg-$1.XXXXXX")"
    export WINEPREFIX="$WORK/prefix" WINEARCH=win64 WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
    unset DISPLAY WAYLAND_DISPLAY
    trap "wine_cleanup $1" EXIT
    say "creating Wine prefix"
    timeout 300 "$WINE" wineboot -i >"$WORK/wineboot.log" 2>&1 ||
        die "wineboot failed (CRASHGEN_KEEP=1 keeps $WORK/wineboot.log)"
    timeout 60 "$WINE" reg add 'HKCU\Software\Wine' /v Version /t REG_SZ /d win10 /f >/dev/null 2>&1 || true
    wine_idle
}

wine_cleanup() {
    "$WINESERVER" -k >/dev/null 2>&1 || true
    if [ "${CRASHGEN_KEEP:-0}" = 1 ]; then echo "$1: kept $WORK"; else rm -rf "$WORK"; fi
}

wine_idle() { timeout 60 "$WINESERVER" -w >/dev/null 2>&1 || "$WINESERVER" -k >/dev/null 2>&1 || true; }
