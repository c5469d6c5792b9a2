#!/usr/bin/env bash
# Installs tmux for the REPL terminal tests (crates/ntdbg-cli/tests/repl_tmux.rs) when it is
# missing; without it those tests skip themselves, and this says so loudly. For CI, before
# `cargo test`.
if ! command -v tmux >/dev/null 2>&1; then
    if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y tmux; }; then
        echo "!!! SKIP: could not install tmux; the REPL tests in tmux will be skipped !!!" >&2
    fi
fi
command -v tmux >/dev/null 2>&1 && tmux -V || true
