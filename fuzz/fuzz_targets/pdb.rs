//! cargo-fuzz target: see `ntdbg_fuzz::pdb`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ntdbg_fuzz::pdb(data));
