#!/usr/bin/env bash
# tests/win32/live.sh - run the live Windows tests (tests/mcp_client/test_win32_*.py): the
# Windows build of ntdbg under Wine debugging testdata/win32live/live.exe through the Win32
# debugging API, driven by the official MCP Python SDK over stdio and by the CLI.
#
#   NTDBG_WIN_BIN=/path/to/ntdbg.exe bash tests/win32/live.sh [pytest args…]
#
# ntdbg.exe needs bcryptprimitives.dll next to it under Wine 8 (the test shim of the Windows
# tier). A fresh Wine prefix is made in a temporary folder unless WINEPREFIX is set.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${NTDBG_WIN_BIN:?set NTDBG_WIN_BIN to the Windows build of ntdbg.exe}"
export NTDBG_WIN_BIN
cd "$ROOT/tests/mcp_client"
started=$(date +%s)
status=0
# The CI venv's Python (official MCP SDK + pytest) unless $PYTHON names another.
if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    [ -x "$ROOT/.ci/venv/bin/python" ] && PYTHON="$ROOT/.ci/venv/bin/python"
fi
PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -m pytest -q -s -p no:cacheprovider test_win32_live.py "$@" || status=$?
echo "win32 live tests: exit $status in $(($(date +%s) - started)) s"
exit $status
