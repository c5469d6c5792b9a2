//! The index answers exactly as the parsed file; damaged, foreign and stale indexes are never
//! trusted; an unwritable cache means no index.

use std::path::{Path, PathBuf};

use breakpad_symbols::{FrameSymbolizer, SimpleModule, SymbolFile};

use super::format::HEADER_LEN;
use super::read::SymbolIndex;
use super::write::build;
use super::IndexSlot;

/// Functions with lines, nested inlinees, an overlap the parser repairs, publics before,
/// between and after them, CFI with add rules, both `STACK WIN` kinds.
pub(crate) const TEXT: &str = "MODULE windows x86 0123456789ABCDEF0123456789ABCDEF1 t.pdb\n\
FILE 0 a.c\nFILE 7 b.h\nINLINE_ORIGIN 0 inner\nINLINE_ORIGIN 1 innermost\n\
FUNC 1000 40 8 outer(int)\n1000 10 3 0\n1010 20 4 7\n1030 10 0 0\n\
INLINE 0 3 0 0 1010 20\nINLINE 1 9 7 1 1018 8\n\
FUNC 1030 20 0 overlapping\n1030 20 5 0\n\
FUNC m 1100 10 4 second\n1100 10 6 0\n\
PUBLIC f00 0 before_all\nPUBLIC 1004 0 inside_outer\nPUBLIC 1080 4 between\n\
PUBLIC 1080 4 between_too\nPUBLIC 1200 0 after_all\n\
STACK CFI INIT 1000 40 .cfa: $esp 4 + .ra: .cfa 4 - ^\n\
STACK CFI 1004 .cfa: $esp 8 +\nSTACK CFI 1010 .cfa: $ebp 8 + $ebp: .cfa 8 - ^\n\
STACK WIN 4 1000 40 4 0 8 0 10 0 1 $T0 $ebp = $eip $T0 4 + ^ =\n\
STACK WIN 0 1100 10 1 0 4 0 0 0 0 1\n";

fn parsed() -> SymbolFile {
    SymbolFile::from_bytes(TEXT.as_bytes()).unwrap()
}

/// Every call `fill_symbol` makes, in order.
#[derive(Default, Debug, PartialEq)]
struct Calls {
    addr: u64,
    seen: Vec<String>,
}

impl FrameSymbolizer for Calls {
    fn get_instruction(&self) -> u64 {
        self.addr
    }
    fn set_function(&mut self, name: &str, base: u64, parameter_size: u32) {
        self.seen
            .push(format!("fn {name} {base:x} {parameter_size}"));
    }
    fn set_source_file(&mut self, file: &str, line: u32, base: u64) {
        self.seen.push(format!("src {file} {line} {base:x}"));
    }
    fn add_inline_frame(&mut self, name: &str, file: Option<&str>, line: Option<u32>) {
        self.seen.push(format!("inline {name} {file:?} {line:?}"));
    }
}

/// What `fill_symbol` reports for `addr` (a module at base 0).
pub(crate) fn fill(sym: &SymbolFile, addr: u64) -> Vec<String> {
    let mut calls = Calls {
        addr,
        ..Calls::default()
    };
    sym.fill_symbol(&SimpleModule::default(), &mut calls);
    calls.seen
}

#[test]
fn every_address_answers_as_the_parsed_file() {
    let full = parsed();
    let bytes = build("id", &full, &[("g_data".to_string(), 0x3000)]).unwrap();
    let index = SymbolIndex::from_vec(bytes, "id").unwrap();
    assert_eq!(index.module_id(), full.module_id);
    assert_eq!(index.data_symbols(), vec![("g_data".to_string(), 0x3000)]);
    for addr in (0..0x1300).chain([u64::MAX, u64::MAX - 1]) {
        let small = index.symbols_at(addr);
        assert_eq!(fill(&small, addr), fill(&full, addr), "at {addr:#x}");
        assert_eq!(small.functions.get(addr), full.functions.get(addr));
        assert_eq!(
            small.cfi_stack_info.get(addr),
            full.cfi_stack_info.get(addr)
        );
        assert_eq!(
            small.win_stack_framedata_info.get(addr),
            full.win_stack_framedata_info.get(addr)
        );
        assert_eq!(
            small.win_stack_fpo_info.get(addr),
            full.win_stack_fpo_info.get(addr)
        );
        let want = full.functions.get(addr).map(|f| (f.address, f.size));
        assert_eq!(index.function_at(addr), want);
    }
    let names = |i: &SymbolIndex| i.functions().map(|f| f.0.to_string()).collect::<Vec<_>>();
    let full_names: Vec<String> = full
        .functions
        .ranges_values()
        .map(|(_, f)| f.name.clone())
        .collect();
    assert_eq!(names(&index), full_names);
    let publics: Vec<(String, u64)> = index.publics().map(|p| (p.0.to_string(), p.1)).collect();
    let full_publics: Vec<(String, u64)> = full
        .publics
        .iter()
        .map(|p| (p.name.clone(), p.address))
        .collect();
    assert_eq!(publics, full_publics);
}

#[test]
fn damaged_truncated_foreign_or_other_version_indexes_are_refused() {
    let good = build("id", &parsed(), &[]).unwrap();
    assert!(SymbolIndex::from_vec(good.clone(), "id").is_some());
    assert!(SymbolIndex::from_vec(good.clone(), "other").is_none());
    for len in (0..good.len()).step_by(7) {
        assert!(SymbolIndex::from_vec(good[..len].to_vec(), "id").is_none());
    }
    for at in (0..good.len()).step_by(3) {
        let mut bad = good.clone();
        bad[at] ^= 0x41;
        assert!(SymbolIndex::from_vec(bad, "id").is_none(), "flip at {at}");
    }
    let mut newer = good.clone();
    newer[8] += 1;
    assert!(SymbolIndex::from_vec(newer, "id").is_none());
    let mut longer = good;
    longer.push(0);
    assert!(SymbolIndex::from_vec(longer, "id").is_none());
}

/// Damage the checksum does not catch (a crafted file): lookups stay in bounds and never
/// panic.
#[test]
fn crafted_indexes_with_a_valid_checksum_never_panic() {
    let good = build("id", &parsed(), &[("d".to_string(), 1)]).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..400 {
        let mut bad = good.clone();
        for _ in 0..1 + round % 8 {
            let at = HEADER_LEN + (next() as usize) % (bad.len() - HEADER_LEN);
            bad[at] = next() as u8;
        }
        let crc = crc32fast::hash(&bad[HEADER_LEN..]);
        bad[24..28].copy_from_slice(&crc.to_le_bytes());
        let Some(index) = SymbolIndex::from_vec(bad, "id") else {
            continue;
        };
        for addr in (0xf00..0x1210).step_by(3) {
            let small = index.symbols_at(addr);
            fill(&small, addr);
            index.function_at(addr);
        }
        index.functions().count();
        index.publics().count();
        index.data_symbols();
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ntdbg-index-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn slot(cache: &Path, source: &Path) -> IndexSlot {
    IndexSlot::new(
        cache,
        "breakpad",
        source,
        "t.pdb",
        "0123456789ABCDEF0123456789ABCDEF1",
    )
    .unwrap()
}

#[test]
fn a_written_index_is_read_back_and_a_damaged_one_is_dropped() {
    let dir = scratch("slot");
    let (cache, source) = (dir.join("cache"), dir.join("t.sym"));
    std::fs::write(&source, TEXT).unwrap();
    let slot = slot(&cache, &source);
    assert!(slot.open().is_none());
    slot.write(&parsed(), &[]);
    assert!(slot.open().is_some());
    let mut bytes = std::fs::read(&slot.path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&slot.path, &bytes).unwrap();
    assert!(slot.open().is_none());
    assert!(!slot.path.exists(), "a damaged index is deleted");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_replaced_symbol_file_never_gets_the_old_index() {
    let dir = scratch("stale");
    let (cache, source) = (dir.join("cache"), dir.join("t.sym"));
    std::fs::write(&source, TEXT).unwrap();
    let old = slot(&cache, &source);
    old.write(&parsed(), &[]);
    std::fs::write(&source, format!("{TEXT}PUBLIC 2000 0 added\n")).unwrap();
    let new = slot(&cache, &source);
    assert_ne!(new.identity, old.identity);
    assert!(new.open().is_none());
    // The old file under the new identity (a name collision) is refused too.
    std::fs::copy(&old.path, &new.path).unwrap();
    assert!(new.open().is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unwritable_cache_means_no_index_and_no_error() {
    let dir = scratch("unwritable");
    let source = dir.join("t.sym");
    std::fs::write(&source, TEXT).unwrap();
    // A file where the cache folder should be: nothing can be created under it.
    let cache = dir.join("not-a-folder");
    std::fs::write(&cache, b"x").unwrap();
    let slot = slot(&cache, &source);
    slot.write(&parsed(), &[]);
    assert!(slot.open().is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}
