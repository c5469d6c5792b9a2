//! cargo-fuzz target: see `ntdbg_fuzz::minidump`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ntdbg_fuzz::minidump(data));
