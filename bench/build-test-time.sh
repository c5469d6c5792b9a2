#!/usr/bin/env bash
# Build-and-test time of the workspace in debug, from clean, for one or more checkouts: the
# build (`cargo test --workspace --no-run`, test binaries included), the number of test
# binaries it links, a rebuild after touching ntdbg-engine (everything above it compiles and
# links again), then the run (`cargo test --workspace`), each timed by /usr/bin/time.
#
# usage: bench/build-test-time.sh [CHECKOUT]...     (default: this checkout)
# e.g.:  git worktree add /tmp/before REV && bench/build-test-time.sh /tmp/before .
#
# Each checkout's target/ is removed first. Run on a quiet machine; on a shared one, repeat
# and compare medians. As in .ci/run: CARGO_INCREMENTAL=0, and ../shared beside the checkout
# for the corpus tests.
set -euo pipefail
export CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
[ $# -gt 0 ] || set -- "$(dirname "$0")/.."
for checkout in "$@"; do
    cd "$checkout"
    echo "== $(git log --oneline -1 | cut -c1-72)"
    rm -rf target
    /usr/bin/time -f "build: %e s wall, %U s user, %M KiB peak" \
        cargo test --workspace --locked --no-run 2>build.log || { tail -20 build.log; exit 1; }
    tail -1 build.log
    echo "target/ after the build: $(du -sh target | cut -f1)"
    touch crates/ntdbg-engine/src/lib.rs
    /usr/bin/time -f "rebuild after touching ntdbg-engine: %e s wall, %U s user" \
        cargo test --workspace --locked --no-run 2>rebuild.log || { tail -20 rebuild.log; exit 1; }
    tail -1 rebuild.log
    echo "test binaries: $(grep -c 'Executable tests/' build.log) integration, $(grep -c 'Executable unittests' build.log) unit"
    # Every test binary runs to its end, so an older commit's failures (a corpus that grew
    # since) do not cut the run short and the times stay comparable.
    /usr/bin/time -f "test run: %e s wall, %U s user" \
        cargo test --workspace --locked --no-fail-fast >/dev/null 2>test.log ||
        echo "(some tests failed: $(grep -c '^error: test failed' test.log) test binaries)"
    tail -1 test.log
    rm -f build.log rebuild.log test.log
    cd - >/dev/null
done
