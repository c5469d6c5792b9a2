//! ntdbg-symbols's integration tests: one module per file beside this one, linked into
//! one test binary (`cargo test -p ntdbg-symbols --test symbols`; a module or test by name:
//! `... --test symbols MODULE::`). `autotests = false` in Cargo.toml: a new file here is
//! declared below, which `every_test_file_is_a_module` checks.

mod breakpad_compare;
mod common;
mod exports;
mod http_default_cache;
mod http_parallel;
mod http_server;
mod lookup;
mod shared;
mod type_index;
mod unwind;
mod variables;

#[test]
fn every_test_file_is_a_module() {
    ntdbg_testutil::assert_test_files_are_modules(env!("CARGO_MANIFEST_DIR"));
}
