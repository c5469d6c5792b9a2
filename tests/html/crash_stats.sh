#!/usr/bin/env bash
# The crash-stats page as a person uses it, in headless Chromium (Debian's, driven by
# playwright-core from npm): a collector with its page, symbols uploaded, the sample dumps
# sent by the Crashpad-protocol client; then tests/html/crash_stats.mjs follows a signature to
# a crash and reads its cause. Screenshots are kept: target/crash-stats{-top,-signature,}.png.
#
# usage: tests/html/crash_stats.sh path/to/ntdbg
set -euo pipefail
BIN=$(realpath "${1:?usage: crash_stats.sh path/to/ntdbg}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX=${NTDBG_NPM_PREFIX:-$ROOT/.ci/venv/npm}
OUT=$ROOT/target/crash-stats
WORK=$(mktemp -d)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$PREFIX" "$ROOT/target"
if [ ! -d "$PREFIX/node_modules/playwright-core" ]; then
    if ! npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error playwright-core@1.65.2 >/dev/null; then
        echo "!!! SKIP: npm could not install playwright-core; the crash-stats browser test did not run !!!" >&2
        exit 0
    fi
fi

"$BIN" symbols upload "$ROOT/testdata/crashy.pdb" "$ROOT/testdata/crashy.exe" --store "$WORK/store" >/dev/null
"$BIN" collect --listen 127.0.0.1:0 --db "$WORK/crashes.db" --store "$WORK/store" --pages --offline \
    2>"$WORK/collect.log" &
server=$!
base=""
for _ in $(seq 300); do
    base=$(grep -o 'http://[^ ]*/submit' "$WORK/collect.log" | sed 's|/submit$||' || true)
    [ -n "$base" ] && break
    sleep 0.1
done
[ -n "$base" ] || { cat "$WORK/collect.log" >&2; echo "the collector did not start" >&2; exit 1; }

python3 "$ROOT/tools/crashpad_upload.py" "$base/submit" "$ROOT"/testdata/crashy-x64-*.dmp \
    --product crashy --version 1.0 --copies 3 --jobs 4 >/dev/null
python3 "$ROOT/tools/crashpad_upload.py" "$base/submit" "$ROOT/testdata/crashy-x64-null.dmp" \
    --product crashy --version 1.1 --copies 2 --salt v11 >/dev/null
expected=$(( $(ls "$ROOT"/testdata/crashy-x64-*.dmp | wc -l) * 3 + 2 ))
python3 - "$base" "$expected" <<'PY'
import sys, time, urllib.request
base, n = sys.argv[1], int(sys.argv[2])
deadline = time.time() + 300
while time.time() < deadline:
    page = urllib.request.urlopen(base + "/?days=1").read().decode()
    if f"<b>{n}</b><span>crashes analysed" in page:
        sys.exit(0)
    time.sleep(0.2)
sys.exit(f"the collector did not analyse {n} reports in time")
PY

export NODE_PATH="$PREFIX/node_modules"
# An .mjs resolves packages from its own folder up, not from NODE_PATH: run a copy beside them.
cp "$ROOT/tests/html/crash_stats.mjs" "$PREFIX/crash_stats.mjs"
timeout 180 node "$PREFIX/crash_stats.mjs" "$base" "crashy!write_null" "write to" "$OUT"
for f in "$OUT-top.png" "$OUT-signature.png" "$OUT.png"; do
    [ -s "$f" ] || { echo "no screenshot $f" >&2; exit 1; }
done
echo "screenshots: $OUT-top.png $OUT-signature.png $OUT.png"
