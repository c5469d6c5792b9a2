#!/bin/sh
# PostgreSQL server binaries for the crash store's tests (crates/ntdbg-cli/tests/store_postgres.rs):
# the tests run `initdb` and `postgres` themselves in a temporary folder (127.0.0.1 and a
# Unix socket there only; as root the server runs as `nobody`). Nothing is started here.
# Prints NTDBG_REQUIRE_POSTGRES=1 when the binaries are there, so that CI can make a skip a failure:
#   eval "$(.ci/install-postgres.sh)"
set -u
have_server() {
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && return 0
    done
    command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1
}
if ! have_server; then
    # Debian's `postgresql` package would also start a cluster; the server binaries alone do.
    if ! { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-common postgresql >&2; }; then
        echo "!!! SKIP: could not install postgresql; the crash store's PostgreSQL tests will be skipped !!!" >&2
        exit 0
    fi
fi
if have_server; then
    echo "export NTDBG_REQUIRE_POSTGRES=1"
fi
