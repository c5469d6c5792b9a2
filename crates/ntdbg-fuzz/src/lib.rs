//! Fuzz entry points for ntdbg.
//!
//! Each entry takes arbitrary bytes and drives one parser of untrusted input the way ntdbg
//! does; it must return normally for every input (errors are fine, panics, hangs and huge
//! allocations are bugs). The cargo-fuzz targets in `fuzz/` call these functions, and this
//! crate's `corpus` test replays every file of `fuzz/corpus/<target>/` through them on
//! stable Rust, so CI keeps the corpora (and the regressions they hold) passing.

mod dumps;
mod gdb;
mod scratch;
mod text;

pub use dumps::{kernel_dump, minidump, pdb};
pub use gdb::gdb_packet;
pub use ntdbg_symbols::fuzz_symbol_index as symbol_index;
pub use text::{command_line, expression};

/// An entry point: one fuzz input in, nothing out.
pub type Entry = fn(&[u8]);

/// Every fuzz target by name (the name of its `fuzz/fuzz_targets/<name>.rs` and
/// `fuzz/corpus/<name>/`).
pub const TARGETS: &[(&str, Entry)] = &[
    ("minidump", minidump),
    ("kernel_dump", kernel_dump),
    ("pdb", pdb),
    ("symbol_index", symbol_index),
    ("command_line", command_line),
    ("expression", expression),
    ("gdb_packet", gdb_packet),
];
