//! ntdbg-analysis's integration tests: one module per file beside this one, linked into
//! one test binary (`cargo test -p ntdbg-analysis --test analysis`; a module or test by name:
//! `... --test analysis MODULE::`). `autotests = false` in Cargo.toml: a new file here is
//! declared below, which `every_test_file_is_a_module` checks.

mod causes;
mod cxx;
mod cxx_samples;
mod cxx_walkers;
mod faults;
mod frame_locals;
mod hang;
mod kernel;
mod signatures;
mod triage;
mod upstream;

#[test]
fn every_test_file_is_a_module() {
    ntdbg_testutil::assert_test_files_are_modules(env!("CARGO_MANIFEST_DIR"));
}
