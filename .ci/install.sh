# The tools the tests drive, installed when missing (CI runs as root on a fresh Debian machine).
# Sourced by .ci/run: for each tool that is there afterwards it exports the variable that makes
# a test needing it fail instead of skipping; a tool that cannot be installed is said loudly,
# and its tests skip and say so.
#
#   gdbserver, gcc, binutils  live GDB-remote tests (they compile testdata/live/live_target.c)
#                             NTDBG_REQUIRE_LIVE=1
#   wine                      the winedbg live tier and the Windows tier   NTDBG_REQUIRE_WINEDBG=1
#   tmux                      the REPL terminal tests
#   minidump-stackwalk 0.27   the side-by-side stack tests (cargo install)
#   PostgreSQL server         the crash store's fleet test                 NTDBG_REQUIRE_POSTGRES=1
#   Garage 2.5                the collector's S3 fleet test (cargo install) NTDBG_REQUIRE_S3=1
#   chromium                  the HTML report and crash-stats page checks
#   rustc-web, mingw-w64      the Windows tier's cross build               NTDBG_WINDOWS_TOOLS=1
#   Python venv .ci/venv      the official MCP SDK and pytest

# Installs Debian packages `$@` once the apt lists are fresh.
apt_install() {
    if [ -z "${apt_updated:-}" ]; then
        apt-get update && apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}

# Says loudly that `$1` is missing and which tests will skip (`$2`).
missing() {
    echo "!!! SKIP: could not install $1; $2 will be skipped !!!" >&2
}

have() {
    command -v "$1" >/dev/null 2>&1
}

echo "== tools: gdbserver, gcc and binutils"
if ! have gdbserver || ! have cc || ! have nm; then
    apt_install gdbserver gcc binutils || missing "gdbserver/gcc/binutils" "the gdbserver tests"
fi
if have gdbserver && have cc && have nm; then
    gdbserver --version | head -1
    export NTDBG_REQUIRE_LIVE=1
fi

echo "== tools: Wine"
if ! have winedbg; then
    apt_install wine wine64 || missing wine "the winedbg live tier"
fi
if have winedbg && have wineserver; then
    wine --version || true
    export NTDBG_REQUIRE_WINEDBG=1
fi

echo "== tools: tmux"
if ! have tmux; then
    apt_install tmux || missing tmux "the REPL tests in tmux"
fi
have tmux && tmux -V || true

echo "== tools: minidump-stackwalk"
if ! have minidump-stackwalk; then
    cargo install --locked minidump-stackwalk --version 0.27.0 ||
        missing minidump-stackwalk "the side-by-side stackwalk tests"
fi

echo "== tools: PostgreSQL server binaries (the tests start their own server)"
eval "$(sh .ci/install-postgres.sh)"

# Garage: an S3-compatible store on crates.io (MinIO is neither in Debian nor on the registries
# this machine reaches). A debug build without debug info: it is never debugged here, and
# linking is most of a debug build's time.
echo "== tools: Garage"
if ! have garage; then
    garage_started=$SECONDS
    CARGO_PROFILE_DEV_DEBUG=0 cargo install --locked --debug garage --version 2.5.0 \
        --no-default-features --features bundled-libs,sqlite ||
        missing garage "the collector's S3 fleet test"
    echo "== garage build took $((SECONDS - garage_started)) s"
fi
if have garage; then
    garage --version || true
    export NTDBG_REQUIRE_S3=1
fi

echo "== tools: Chromium"
if ! have chromium; then
    apt_install chromium || missing chromium "the browser checks"
fi

echo "== tools: the Windows cross build"
windows_packages="rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64 wine"
if ! tools/windows/build.sh --check-tools; then
    # shellcheck disable=SC2086
    apt_install $windows_packages || true
fi
if tools/windows/build.sh --check-tools; then
    export NTDBG_WINDOWS_TOOLS=1
else
    missing "the Windows toolchain ($windows_packages)" "the Windows tier"
fi

echo "== tools: Python venv with the official MCP SDK (mcp 2.x) and pytest"
if [ ! -x .ci/venv/bin/python ]; then
    if ! python3 -m venv .ci/venv; then
        apt_install python3-venv
        python3 -m venv .ci/venv
    fi
fi
.ci/venv/bin/pip install --quiet --disable-pip-version-check "mcp>=2,<3" pytest
