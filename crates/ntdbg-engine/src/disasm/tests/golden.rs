//! Every instruction line of the cdb transcripts (`golden_vectors.txt`) must come out
//! byte-for-byte identical.

use super::support::{address, hex, names_in, SparseMemory, TableNamer};
use crate::disasm::{disassemble_forward, Bitness};

const VECTORS: &str = include_str!("golden_vectors.txt");

/// One golden vector: bytes, address, expected line.
struct Vector<'a> {
    bytes: Vec<u8>,
    address: u64,
    bitness: Bitness,
    expected: &'a str,
}

fn vectors() -> Vec<Vector<'static>> {
    VECTORS
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| {
            let mut parts = line.splitn(3, " | ");
            let bytes = hex(parts.next().expect("bytes"));
            let (address, bitness) = address(parts.next().expect("address"));
            let expected = parts.next().expect("expected line");
            Vector {
                bytes,
                address,
                bitness,
                expected,
            }
        })
        .collect()
}

fn disassemble(vector: &Vector<'_>) -> String {
    let mut memory = SparseMemory::default();
    memory.map(vector.address, &vector.bytes);
    let mut namer = TableNamer::default();
    namer.exact.extend(names_in(vector.expected));
    let lines = disassemble_forward(vector.bitness, &memory, &namer, vector.address, 1);
    lines.into_iter().map(|l| l.text).next().unwrap_or_default()
}

#[test]
fn golden_file_covers_both_bitnesses() {
    let vectors = vectors();
    assert!(vectors.len() >= 30, "only {} vectors", vectors.len());
    let x64 = vectors
        .iter()
        .filter(|v| v.bitness == Bitness::Bits64)
        .count();
    assert!(
        x64 >= 10 && vectors.len() - x64 >= 10,
        "x64 {x64} of {}",
        vectors.len()
    );
}

#[test]
fn every_transcript_line_matches_exactly() {
    let vectors = vectors();
    let mismatches: Vec<String> = vectors
        .iter()
        .filter_map(|v| {
            let got = disassemble(v);
            (got != v.expected).then(|| format!("expected: {}\n     got: {got}", v.expected))
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of {} lines differ:\n{}",
        mismatches.len(),
        vectors.len(),
        mismatches.join("\n")
    );
}

#[test]
fn golden_lines_carry_their_parts() {
    for v in vectors() {
        let mut memory = SparseMemory::default();
        memory.map(v.address, &v.bytes);
        let mut namer = TableNamer::default();
        namer.exact.extend(names_in(v.expected));
        let line = &disassemble_forward(v.bitness, &memory, &namer, v.address, 1)[0];
        assert_eq!(line.address, v.address);
        assert_eq!(super::support::hex(&line.bytes), v.bytes);
        assert!(line.readable);
        assert!(v.expected.contains(&line.mnemonic), "{}", v.expected);
        assert!(v.expected.ends_with(&line.operands), "{}", v.expected);
    }
}
