//! Whole `u` and `ub` outputs from real cdb sessions, label lines included, must be reproduced
//! exactly from their own bytes.
//!
//! Memory and symbols are rebuilt from each block: instruction lines give the bytes; a label
//! `sym+0xNN [source]:` at address A says `sym` starts at A - 0xNN (and gives A's source line);
//! `name (address)` operands give exact names.

use super::support::{address, hex, names_in, SparseMemory, TableNamer};
use crate::disasm::{disassemble_backward, disassemble_forward, render, Bitness};

const FIXTURES: &str = "mozilla-fuzzmanager/FTB/Signatures/tests/fixtures";
const CLUSTERFUZZ: &str =
    "google-clusterfuzz/src/clusterfuzz/_internal/tests/core/crash_analysis/stack_parsing/stack_analyzer_data";

/// A transcript block rebuilt into memory and symbols.
struct Block {
    text: String,
    memory: SparseMemory,
    namer: TableNamer,
    first: u64,
    instructions: usize,
    bitness: Bitness,
    end: u64,
}

fn is_prompt(line: &str) -> bool {
    line.split_once("> ").is_some_and(|(prompt, _)| {
        prompt.starts_with(|c: char| c.is_ascii_digit()) && prompt.contains(':')
    })
}

/// Builds a [`Block`] from its label and instruction lines.
fn block(lines: &[&str]) -> Block {
    let mut memory = SparseMemory::default();
    let mut namer = TableNamer::default();
    let mut pending_label: Option<&str> = None;
    let mut first = None;
    let mut end = 0;
    let mut instructions = 0;
    let mut bitness = Bitness::Bits32;
    for line in lines {
        if let Some(label) = line.strip_suffix(':') {
            pending_label = Some(label);
            continue;
        }
        let mut fields = line.split_whitespace();
        let (addr, bits) = address(fields.next().expect("address"));
        let bytes = hex(fields.next().expect("bytes"));
        memory.map(addr, &bytes);
        namer.exact.extend(names_in(line));
        if let Some(label) = pending_label.take() {
            let (name, source) = match label.split_once(" [") {
                Some((name, source)) => (name, source.strip_suffix(']')),
                None => (label, None),
            };
            let (symbol, offset) = match name.rsplit_once("+0x") {
                Some((symbol, offset)) => {
                    (symbol, u64::from_str_radix(offset, 16).expect("offset"))
                }
                None => (name, 0),
            };
            namer.symbol(addr - offset, symbol);
            if let Some(source) = source {
                namer.lines.insert(addr, source.to_string());
            }
        }
        first.get_or_insert(addr);
        end = addr + bytes.len() as u64;
        instructions += 1;
        bitness = bits;
    }
    Block {
        text: lines.iter().map(|l| format!("{l}\n")).collect(),
        memory,
        namer,
        first: first.expect("instructions"),
        instructions,
        bitness,
        end,
    }
}

/// The output of the first plain `u` command in a transcript.
fn u_block(text: &str) -> Option<Vec<&str>> {
    let mut lines = text
        .lines()
        .skip_while(|l| !(is_prompt(l) && l.ends_with("> u")));
    lines.next()?;
    Some(lines.take_while(|l| !is_prompt(l)).collect())
}

#[test]
fn u_outputs_of_all_transcripts_reproduce_exactly() {
    ntdbg_testutil::require_testdata!();
    let mut checked = 0;
    for entry in std::fs::read_dir(ntdbg_testutil::testdata(FIXTURES)).expect("fixtures") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if !(name.starts_with("cdb-") && name.ends_with("-crashlog.txt")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("transcript");
        let Some(lines) = u_block(&text) else {
            continue;
        };
        let b = block(&lines);
        let got = disassemble_forward(b.bitness, &b.memory, &b.namer, b.first, b.instructions);
        assert_eq!(render(&got), b.text, "{name}");
        checked += 1;
    }
    assert!(checked >= 18, "only {checked} transcripts had a `u` block");
}

/// The `ub` output at the end of a clusterfuzz transcript: from `label` to `quit:`.
fn ub_block(file: &str, label: &str) -> Block {
    let text = std::fs::read_to_string(ntdbg_testutil::testdata(&format!("{CLUSTERFUZZ}/{file}")))
        .expect("transcript");
    let start = text.rfind(&format!("\n{label}\n")).expect("ub label") + 1;
    let lines: Vec<&str> = text[start..]
        .lines()
        .take_while(|l| !l.starts_with("quit:"))
        .collect();
    block(&lines)
}

/// Real code bytes from other transcript lines, mapped before the block so `ub` has to find the
/// instruction boundaries itself.
fn map_prefix(b: &mut Block, prefix: &str) {
    let bytes = hex(prefix);
    b.memory.map(b.first - bytes.len() as u64, &bytes);
}

#[test]
fn ub_x86_matches_cdb() {
    ntdbg_testutil::require_testdata!();
    let mut b = ub_block(
        "cdb_divide_by_zero.txt",
        "MSHTML!ForStatementNode::DetermineLoopIterations<int>+0x2f:",
    );
    map_prefix(
        &mut b,
        "8b4dfc83c4188d542404b85b00000064ff15c0000000c2140033c98b46248b45fc",
    );
    let got = disassemble_backward(b.bitness, &b.memory, &b.namer, b.end, 8);
    assert_eq!(b.instructions, 8);
    assert_eq!(render(&got), b.text);
}

#[test]
fn ub_x64_matches_cdb() {
    ntdbg_testutil::require_testdata!();
    let mut b = ub_block(
        "cdb_integer_overflow.txt",
        "jscript9!Js::TaggedInt::Divide+0x65:",
    );
    map_prefix(
        &mut b,
        "4c8b014c3bc04c8b42084c3bc2488b4210498d14c0418bc1480bc14d03c58bf0",
    );
    let got = disassemble_backward(b.bitness, &b.memory, &b.namer, b.end, 8);
    assert_eq!(b.instructions, 8);
    assert_eq!(render(&got), b.text);
}
