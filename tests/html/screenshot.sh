#!/usr/bin/env bash
# The triage HTML report as a person sees it: render it in headless Chromium and check the
# screenshot is a real page (not blank, not an error page). Needs Debian's `chromium`.
#
# usage: tests/html/screenshot.sh path/to/ntdbg [OUT.png]
set -euo pipefail
BIN=$(realpath "${1:?usage: screenshot.sh path/to/ntdbg [OUT.png]}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${2:-$ROOT/target/triage-report.png}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

"$BIN" triage "$ROOT/testdata" --offline --html "$WORK/report.html" >"$WORK/summary.txt"
grep -q "bucket(s)" "$WORK/summary.txt"
grep -q "AV_WRITE_NULL crashy!write_null" "$WORK/report.html"

# Flags as the workplace documents them: no network chatter, a fresh profile, root-safe.
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$WORK/profile" --window-size=1280,1600 \
    --screenshot="$OUT" "file://$WORK/report.html" >/dev/null 2>&1

python3 - "$OUT" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
assert (width, height) == (1280, 1600), (width, height)
# A blank or error page compresses to a few KiB; the report is far richer.
assert len(data) > 50_000, f"screenshot only {len(data)} bytes: blank page?"
# Decode the image data and count distinct rows: a real page has many.
chunks, pos = [], 8
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    if kind == b"IDAT":
        chunks.append(data[pos + 8:pos + 8 + length])
    pos += 12 + length
raw = zlib.decompress(b"".join(chunks))
stride = len(raw) // height
rows = {raw[i * stride + 1:(i + 1) * stride] for i in range(height)}
assert len(rows) > 200, f"only {len(rows)} distinct pixel rows"
print(f"screenshot ok: {width}x{height}, {len(data)} bytes, {len(rows)} distinct rows")
PY
