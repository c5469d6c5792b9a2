//! cargo-fuzz target: see `ntdbg_fuzz::command_line`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ntdbg_fuzz::command_line(data));
