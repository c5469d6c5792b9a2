//! ntdbg-targets's integration tests: one module per file beside this one, linked into
//! one test binary (`cargo test -p ntdbg-targets --test targets`; a module or test by name:
//! `... --test targets MODULE::`). `autotests = false` in Cargo.toml: a new file here is
//! declared below, which `every_test_file_is_a_module` checks.

mod corrupt;
mod gdb_target;
mod kernel_dump;
mod shared_bytes;
mod wine_thread_list;

#[test]
fn every_test_file_is_a_module() {
    ntdbg_testutil::assert_test_files_are_modules(env!("CARGO_MANIFEST_DIR"));
}
