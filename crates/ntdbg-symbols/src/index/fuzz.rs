//! The `symbol_index` fuzz target's entry: arbitrary bytes read as an index (its checksums
//! made to match first, so the records themselves are exercised, not only the checksum that
//! would refuse them), and the same bytes read as Breakpad text, indexed and read back, where
//! every lookup must answer as the parsed text does.

use breakpad_symbols::SymbolFile;

use super::read::SymbolIndex;
use super::write::{build, seal};

/// The identity every fuzzed index is written and read with.
const IDENTITY: &str = "fuzz";

/// Reads `data` both ways; returns normally for every input, and panics only when an index
/// made from parsed text answers differently from that text (a writer or reader bug).
pub fn symbol_index(data: &[u8]) {
    if let Some(index) = SymbolIndex::from_vec(seal(data.to_vec()), IDENTITY) {
        exercise(&index);
    }
    let Ok(parsed) = SymbolFile::from_bytes(data) else {
        return;
    };
    let Some(bytes) = build(IDENTITY, &parsed, &[]) else {
        return;
    };
    let index = SymbolIndex::from_vec(bytes, IDENTITY).expect("a fresh index reads back");
    for addr in boundaries(&parsed) {
        assert_same_records_at(&index.symbols_at(addr), &parsed, addr, "fuzzed index");
    }
}

/// Panics unless `small` (an index's or a lazy reader's answer) and `full` (the parsed file)
/// hold the same function and unwind records at `addr`; `what` names the case in the message.
pub(crate) fn assert_same_records_at(small: &SymbolFile, full: &SymbolFile, addr: u64, what: &str) {
    assert_eq!(
        small.functions.get(addr),
        full.functions.get(addr),
        "{what} at {addr:#x}"
    );
    assert_eq!(
        small.cfi_stack_info.get(addr),
        full.cfi_stack_info.get(addr),
        "{what} at {addr:#x}"
    );
    assert_eq!(
        small.win_stack_framedata_info.get(addr),
        full.win_stack_framedata_info.get(addr),
        "{what} at {addr:#x}"
    );
    assert_eq!(
        small.win_stack_fpo_info.get(addr),
        full.win_stack_fpo_info.get(addr),
        "{what} at {addr:#x}"
    );
}

/// Every lookup an index answers, at a spread of addresses and over its whole tables.
fn exercise(index: &SymbolIndex) {
    let starts: Vec<u64> = index.functions().map(|f| f.1).take(64).collect();
    for addr in starts
        .into_iter()
        .flat_map(|a| [a.wrapping_sub(1), a, a.wrapping_add(1)])
    {
        let _ = index.symbols_at(addr);
        let _ = index.function_at(addr);
    }
    let _ = index.publics().count();
    let _ = index.data_symbols();
    let _ = index.verify_all();
}

/// The first and last address of every function, public and unwind record, and the ones
/// just outside them.
fn boundaries(parsed: &SymbolFile) -> Vec<u64> {
    let ranges = parsed
        .functions
        .ranges_values()
        .map(|(r, _)| (r.start, r.end))
        .chain(
            parsed
                .cfi_stack_info
                .ranges_values()
                .map(|(r, _)| (r.start, r.end)),
        )
        .chain(parsed.publics.iter().map(|p| (p.address, p.address)));
    ranges
        .take(256)
        .flat_map(|(start, end)| [start.wrapping_sub(1), start, end, end.wrapping_add(1)])
        .collect()
}
