//! ntdbg-commands's integration tests: one module per file beside this one, linked into
//! one test binary (`cargo test -p ntdbg-commands --test commands`; a module or test by name:
//! `... --test commands MODULE::`). `autotests = false` in Cargo.toml: a new file here is
//! declared below, which `every_test_file_is_a_module` checks.

mod address_synthetic;
mod corrupt_session;
mod faults_golden;
mod files_changed;
mod frames;
mod golden;
mod image_memory;
mod kernel;
mod kernel_objects;
mod live_control;
mod live_filters;
mod live_gdbserver;
mod live_winedbg;
mod locks;
mod locks_synthetic;
mod many_threads;
mod minidump_builder;
mod policy;
mod process_blocks;
mod process_info;
mod process_info_synthetic;
mod sorted_json;
mod threads;
mod typed;
mod types;

#[test]
fn every_test_file_is_a_module() {
    ntdbg_testutil::assert_test_files_are_modules(env!("CARGO_MANIFEST_DIR"));
}
