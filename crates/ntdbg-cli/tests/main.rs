//! ntdbg-cli's integration tests: one module per file beside this one, linked into
//! one test binary (`cargo test -p ntdbg-cli --test cli`; a module or test by name:
//! `... --test cli MODULE::`). `autotests = false` in Cargo.toml: a new file here is
//! declared below, which `every_test_file_is_a_module` checks.
//!
//! The Windows tier (`.ci/run`, under Wine) runs the `cli` module only: the others drive Linux
//! tools (tmux, gdbserver, minidump-stackwalk, PostgreSQL, a shell) or were never ported.

mod cli;
#[cfg(not(windows))]
mod collect;
#[cfg(not(windows))]
mod docs_agree;
#[cfg(not(windows))]
mod error_model;
#[cfg(not(windows))]
mod help_examples;
#[cfg(not(windows))]
mod index_blocks;
#[cfg(not(windows))]
mod repl_tmux;
#[cfg(not(windows))]
mod replay_fixed_commands;
#[cfg(not(windows))]
mod s3_server;
#[cfg(not(windows))]
mod shell_docs;
#[cfg(not(windows))]
mod stackwalk_compat;
#[cfg(not(windows))]
mod store;
#[cfg(not(windows))]
mod store_common;
#[cfg(not(windows))]
mod store_postgres;
#[cfg(not(windows))]
mod symbol_server;
#[cfg(not(windows))]
mod xz_symbols;

#[cfg(not(windows))]
#[test]
fn every_test_file_is_a_module() {
    ntdbg_testutil::assert_test_files_are_modules(env!("CARGO_MANIFEST_DIR"));
}
