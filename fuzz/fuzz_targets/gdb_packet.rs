//! cargo-fuzz target: see `ntdbg_fuzz::gdb_packet`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ntdbg_fuzz::gdb_packet(data));
