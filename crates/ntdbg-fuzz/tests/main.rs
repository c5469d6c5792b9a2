//! ntdbg-fuzz's integration tests: one module per file beside this one, linked into
//! one test binary (`cargo test -p ntdbg-fuzz --test fuzz`; a module or test by name:
//! `... --test fuzz MODULE::`). `autotests = false` in Cargo.toml: a new file here is
//! declared below, which `every_test_file_is_a_module` checks.

mod corpus;
mod regressions;

#[test]
fn every_test_file_is_a_module() {
    ntdbg_testutil::assert_test_files_are_modules(env!("CARGO_MANIFEST_DIR"));
}
