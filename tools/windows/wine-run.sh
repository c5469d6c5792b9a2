#!/usr/bin/env bash
# cargo's runner for x86_64-pc-windows-gnu (set by tools/windows/build.sh): runs a Windows
# executable under Wine without Wine's own debug chatter, so test output stays readable.
# The program's exit code is Wine's.
set -euo pipefail
export WINEDEBUG="${WINEDEBUG:--all}"
exec wine "$@"
