//! cargo-fuzz target: see `ntdbg_fuzz::symbol_index`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ntdbg_fuzz::symbol_index(data));
