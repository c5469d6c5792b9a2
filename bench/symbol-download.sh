#!/usr/bin/env bash
# Symbol download figures (BENCHMARKS.md, "Symbol download"): `ntdbg analyze` on the winelab
# x64 null dump, alone in its folder, with `--symbols srv*CACHE*http://127.0.0.1:PORT`, where
# crashy.exe and crashy.pdb live only on a local HTTP symbol server (python3's http.server,
# every request delayed by DELAY_MS). Run 1 downloads into an empty cache; run 2 is the same
# command with the server stopped (cache hit). Prints the median of RUNS rounds.
# Usage: bash bench/symbol-download.sh [RUNS] [DELAY_MS]
# Needs the shared corpus (../shared/testdata or $NTDBG_TESTDATA).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
data="${NTDBG_TESTDATA:-$here/../shared/testdata}/winelab/x64"
runs="${1:-5}"
delay_ms="${2:-0}"
bin="$here/target/release/ntdbg"
(cd "$here" && cargo build --release -q -p ntdbg-cli)
work="$(mktemp -d)"
server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
trap 'stop_server; rm -rf "$work"' EXIT

mkdir -p "$work/dump" "$work/store/crashy.exe/6B0CCCD25c000" \
    "$work/store/crashy.pdb/99B57C97E2C099B24C4C44205044422E1"
cp "$data/null.inproc.dmp" "$work/dump/"
cp "$data/crashy.exe" "$work/store/crashy.exe/6B0CCCD25c000/"
cp "$data/crashy.pdb" "$work/store/crashy.pdb/99B57C97E2C099B24C4C44205044422E1/"

cat > "$work/server.py" <<'EOF'
import functools, http.server, sys, time
root, delay = sys.argv[1], int(sys.argv[2]) / 1000
class Slow(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        time.sleep(delay)
        super().do_GET()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Slow, directory=root))
print(server.server_address[1], flush=True)
server.serve_forever()
EOF

now() { date +%s.%N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
first=()
second=()
for _ in $(seq "$runs"); do
    rm -rf "$work/cache"
    coproc SERVER { exec python3 "$work/server.py" "$work/store" "$delay_ms"; }
    server_pid=$SERVER_PID
    read -r port <&"${SERVER[0]}"
    path="srv*$work/cache*http://127.0.0.1:$port"
    a=$(now)
    "$bin" analyze "$work/dump/null.inproc.dmp" --symbols "$path" > "$work/first.txt" 2>/dev/null
    b=$(now)
    stop_server
    "$bin" analyze "$work/dump/null.inproc.dmp" --symbols "$path" > "$work/second.txt" 2>/dev/null
    c=$(now)
    grep -q "crashy!crash_null_write" "$work/first.txt" || { echo "run 1 did not symbolize" >&2; exit 1; }
    cmp -s "$work/first.txt" "$work/second.txt" || { echo "run 2 differs from run 1" >&2; exit 1; }
    first+=("$(awk -v a="$a" -v b="$b" 'BEGIN { print b - a }')")
    second+=("$(awk -v a="$b" -v b="$c" 'BEGIN { print b - a }')")
done
printf 'delay per request: %s ms, %s rounds\n' "$delay_ms" "$runs"
printf 'run 1 (download):            median %.3f s\n' "$(printf '%s\n' "${first[@]}" | median)"
printf 'run 2 (server stopped, cache): median %.3f s\n' "$(printf '%s\n' "${second[@]}" | median)"
