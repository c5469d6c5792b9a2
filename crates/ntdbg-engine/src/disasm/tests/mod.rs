//! Tests of the disassembler: golden lines and whole `u`/`ub` blocks from real cdb transcripts,
//! real code from PE files and a minidump, flow analysis, and malformed input.

mod backward_tests;
mod dump_tests;
mod flow_tests;
mod format_tests;
mod golden;
mod pe_tests;
mod robustness;
mod support;
mod transcript;
