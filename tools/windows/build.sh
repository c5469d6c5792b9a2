#!/usr/bin/env bash
# Builds ntdbg for Windows (x86_64-pc-windows-gnu) on Linux, and runs it under Wine.
#
#   tools/windows/build.sh                      # build ntdbg.exe (-p ntdbg-cli)
#   tools/windows/build.sh build -p ntdbg-cli   # any cargo subcommand and arguments
#   tools/windows/build.sh test -p ntdbg-engine --lib   # tests, run under Wine
#   tools/windows/build.sh clippy -p ntdbg-mcp --all-targets -- -D warnings
#                                               # lints (needs rust-web-clippy)
#   tools/windows/build.sh --check-tools        # only check the toolchain (exit 2 if missing)
#
# Uses Debian's rustc-web (Rust 1.96 with the standard library's source): the standard library
# is compiled for the target with -Zbuild-std (RUSTC_BOOTSTRAP=1), linked with mingw-w64, and
# run by Wine (cargo's runner for the target). Everything it sets is for this target only, in
# the environment of this one cargo call: the Linux build is untouched.
#
# Output goes to target/windows under the workspace, or $NTDBG_WIN_TARGET_DIR. It also builds
# the test-only bcryptprimitives.dll shim (tools/windows/bcryptprimitives.c) next to the
# executables (debug/ and debug/deps/): Wine 8 lacks that DLL, which Rust's std needs.
# Never ship the shim.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
triple=x86_64-pc-windows-gnu
rustc=/usr/bin/rustc
cargo=/usr/bin/cargo
linker=x86_64-w64-mingw32-gcc
install_hint="apt-get install rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64 wine"

missing=()
[ -x "$rustc" ] || missing+=("$rustc (rustc-web)")
[ -x "$cargo" ] || missing+=("$cargo (cargo-web)")
if [ -x "$rustc" ]; then
    sysroot="$("$rustc" --print sysroot)"
    [ -f "$sysroot/lib/rustlib/src/rust/library/Cargo.lock" ] ||
        missing+=("the standard library's source in $sysroot/lib/rustlib/src (rust-web-src)")
fi
command -v "$linker" >/dev/null 2>&1 || missing+=("$linker (gcc-mingw-w64-x86-64)")
command -v wine >/dev/null 2>&1 || missing+=("wine (needed to run tests)")
if [ "${#missing[@]}" -gt 0 ]; then
    echo "tools/windows/build.sh: missing:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    echo "install them with: $install_hint" >&2
    exit 2
fi
version="$("$rustc" --version)"
case "$version" in
    "rustc 1."9[6-9]*|"rustc 1."[1-9][0-9][0-9]*) ;;
    *) echo "tools/windows/build.sh: $rustc is $version; rustc-web 1.96 or later is needed ($install_hint)" >&2
       exit 2 ;;
esac
if [ "${1:-}" = "--check-tools" ]; then
    echo "Windows toolchain: $version, $("$linker" --version | head -1), $(wine --version 2>/dev/null)"
    exit 0
fi

target_dir="${NTDBG_WIN_TARGET_DIR:-$repo/target/windows}"
profile_dir="$target_dir/$triple/debug"
case " $* " in *" --release "*) profile_dir="$target_dir/$triple/release" ;; esac

# The shim, next to the executables and the test binaries.
mkdir -p "$profile_dir/deps"
shim="$profile_dir/bcryptprimitives.dll"
if [ ! -f "$shim" ] || [ "$repo/tools/windows/bcryptprimitives.c" -nt "$shim" ]; then
    "$linker" -shared -O2 -o "$shim" "$repo/tools/windows/bcryptprimitives.c" -ladvapi32
fi
cp -p "$shim" "$profile_dir/deps/bcryptprimitives.dll"

# The cargo subcommand (default: build ntdbg.exe), then its arguments.
if [ "$#" -eq 0 ]; then
    set -- build -p ntdbg-cli
elif [ "${1#-}" != "$1" ]; then
    set -- build "$@"
fi
subcommand="$1"
shift

export RUSTC_BOOTSTRAP=1 RUSTC="$rustc" CARGO_TARGET_DIR="$target_dir"
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER="$linker"
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$repo/tools/windows/wine-run.sh"
# No debug info unless asked for: a debug ntdbg.exe with it is over 400 MB, and linking it and
# every test binary is most of the Windows tier's time (panics still name file and line).
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-0}"
cd "$repo"
if [ "$subcommand" = clippy ]; then
    # rustc-web's own clippy: cargo would find rustup's cargo-clippy (another Rust) first.
    clippy=/usr/bin/cargo-clippy
    [ -x "$clippy" ] || { echo "tools/windows/build.sh: $clippy is missing (apt-get install rust-web-clippy)" >&2; exit 2; }
    CARGO="$cargo" exec "$clippy" clippy -Zbuild-std=std,panic_abort --target "$triple" "$@"
fi
exec "$cargo" "$subcommand" -Zbuild-std=std,panic_abort --target "$triple" "$@"
