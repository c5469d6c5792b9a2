//! ntdbg-engine's integration tests: one module per file beside this one, linked into
//! one test binary (`cargo test -p ntdbg-engine --test engine`; a module or test by name:
//! `... --test engine MODULE::`). `autotests = false` in Cargo.toml: a new file here is
//! declared below, which `every_test_file_is_a_module` checks.

mod disasm_setup_cost;
mod frame_vars;
mod live_events;
mod stack_walk;

#[test]
fn every_test_file_is_a_module() {
    ntdbg_testutil::assert_test_files_are_modules(env!("CARGO_MANIFEST_DIR"));
}
