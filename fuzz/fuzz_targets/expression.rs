//! cargo-fuzz target: see `ntdbg_fuzz::expression`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ntdbg_fuzz::expression(data));
