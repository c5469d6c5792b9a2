//! cargo-fuzz target: see `ntdbg_fuzz::kernel_dump`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ntdbg_fuzz::kernel_dump(data));
