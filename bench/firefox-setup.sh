# Shared by the bench scripts that run ntdbg and minidump-stackwalk side by side on the Firefox
# dumps (source it first, with the script's own arguments): reads PAIRS (default 11) and NTDBG
# (default target/release/ntdbg) from them, finds the test data (T) and minidump-stackwalk
# (MSW), makes a scratch folder (WORK, removed on exit) holding the Firefox symbols decompressed
# (FF_PLAIN, beside the `.sym.xz` originals in FF_XZ), sources bench/measure.sh, and defines
# `wait_for_index_writer`: a first run leaves its symbol index to a detached writer, awaited
# outside the timing (this binary's writers only, found by its own path, symlinks resolved).
PAIRS=${1:-11}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=${NTDBG_TESTDATA:-$ROOT/../shared/testdata}
NTDBG=${2:-$ROOT/target/release/ntdbg}
WRITER="$(realpath -m "$NTDBG") __symbol-index"
MSW=$(command -v minidump-stackwalk) || { echo "minidump-stackwalk not on PATH" >&2; exit 2; }
[ -x "$NTDBG" ] || { echo "build first: cargo build --release -p ntdbg-cli" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

FF=$T/mozilla-minidump-stackwalk-pgo/pgo_data
FF_XZ=$FF/symbols
FF_PLAIN=$WORK/firefox-symbols
cp -r "$FF_XZ" "$FF_PLAIN"
chmod -R u+w "$FF_PLAIN"
find "$FF_PLAIN" -name '*.sym.xz' -exec xz -d {} +

# shellcheck source=bench/measure.sh
source "$ROOT/bench/measure.sh"
wait_for_index_writer() { while pgrep -f -- "^$WRITER " >/dev/null; do sleep 0.05; done; }
