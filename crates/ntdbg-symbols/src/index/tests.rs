//! The index answers exactly as the parsed file; damaged, foreign and stale indexes are never
//! trusted; an unwritable cache means no index.

use std::path::{Path, PathBuf};

use breakpad_symbols::{FrameSymbolizer, SimpleModule, SymbolFile};

use breakpad_symbols::SymbolFile as Parsed;
use ntdbg_formats::store::{PdbIdentity, PdbSignature};

use super::format::{BLOCK_LEN, HEADER_LEN};
pub(crate) use super::fuzz::assert_same_records_at;
use super::read::SymbolIndex;
use super::write::{build, seal};
use super::{finish_index_writes, IndexSlot, IndexedTables, ReadSource, Tables};

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
        assert_same_records_at(&small, &full, addr, "index");
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

/// Whether an index is refused on open, or found damaged by a walk over every block.
fn refused(bytes: Vec<u8>) -> bool {
    SymbolIndex::from_vec(bytes, "id")
        .is_none_or(|index| index.checked(SymbolIndex::verify_all) != Some(true))
}

#[test]
fn damaged_truncated_foreign_or_other_version_indexes_are_refused() {
    let good = build("id", &parsed(), &[]).unwrap();
    assert!(!refused(good.clone()));
    assert!(SymbolIndex::from_vec(good.clone(), "other").is_none());
    for len in (0..good.len()).step_by(7) {
        assert!(SymbolIndex::from_vec(good[..len].to_vec(), "id").is_none());
    }
    for at in (0..good.len()).step_by(3) {
        let mut bad = good.clone();
        bad[at] ^= 0x41;
        assert!(refused(bad), "flip at {at}");
    }
    let mut newer = good.clone();
    newer[8] += 1;
    assert!(SymbolIndex::from_vec(newer, "id").is_none());
    let mut longer = good;
    longer.push(0);
    assert!(SymbolIndex::from_vec(longer, "id").is_none());
}

/// Damage the checksums do not catch (a crafted file): lookups stay in bounds and never
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
        let table_len = (bad.len() - HEADER_LEN).div_ceil(BLOCK_LEN as usize + 4) * 4;
        for _ in 0..1 + round % 8 {
            let at = HEADER_LEN + (next() as usize) % (bad.len() - HEADER_LEN - table_len);
            bad[at] = next() as u8;
        }
        let Some(index) = SymbolIndex::from_vec(seal(bad), "id") else {
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

/// Serializes the tests that wait for index writes: [`finish_index_writes`] joins every
/// writer of the process, and a writer joined by another test's call is not yet done.
static WRITES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A real index damaged in each of its blocks in turn: it is refused on open (and deleted), or
/// its lookups answer as the symbol file does (from the symbol file, once a damaged block is
/// read) and it is rebuilt. Returns (blocks damaged mid-session, blocks).
fn damage_every_block(
    slot: &IndexSlot,
    full: &Parsed,
    read_source: impl Fn() -> ReadSource,
    addresses: &[u64],
) -> (usize, usize) {
    let _writes = WRITES.lock().unwrap_or_else(|e| e.into_inner());
    let good = std::fs::read(&slot.path).unwrap();
    let body_len = u64::from_le_bytes(good[16..24].try_into().unwrap()) as usize;
    let blocks = body_len.div_ceil(BLOCK_LEN as usize);
    let names = |t: &Tables| t.functions().map(|f| f.0.to_string()).collect::<Vec<_>>();
    let full_names: Vec<String> = full
        .functions
        .ranges_values()
        .map(|(_, f)| f.name.clone())
        .collect();
    let mut answered = 0;
    for block in 0..blocks {
        let mut bad = good.clone();
        bad[HEADER_LEN + block * BLOCK_LEN as usize + (block * 7919) % 97] ^= 0x5a;
        std::fs::write(&slot.path, &bad).unwrap();
        let Some(index) = slot.open() else {
            assert!(!slot.path.exists(), "block {block}: refused and deleted");
            continue;
        };
        answered += 1;
        let tables = Tables::Indexed(IndexedTables::new(index, slot.clone(), read_source()));
        for &addr in addresses {
            assert_eq!(
                fill(&tables.at(addr), addr),
                fill(full, addr),
                "block {block} at {addr:#x}"
            );
            let want = full.functions.get(addr).map(|f| (f.address, f.size));
            assert_eq!(tables.function_at(addr), want, "block {block} at {addr:#x}");
        }
        assert_eq!(names(&tables), full_names, "block {block}");
        assert!(
            tables.parsed().is_some() || tables.lazy_bytes() > 0,
            "block {block}: fell back"
        );
        finish_index_writes();
        let rebuilt = std::fs::read(&slot.path).unwrap();
        assert_eq!(rebuilt, good, "block {block}: rebuilt");
    }
    std::fs::write(&slot.path, &good).unwrap();
    (answered, blocks)
}

/// Addresses around every `step`th function and public: its start, inside, just past it.
fn addresses_of(full: &Parsed, step: usize) -> Vec<u64> {
    let functions = full
        .functions
        .ranges_values()
        .map(|(r, _)| (r.start, r.end));
    let publics = full.publics.iter().map(|p| (p.address, p.address));
    functions
        .chain(publics)
        .step_by(step)
        .flat_map(|(start, end)| [start, start + (end - start) / 2, end.saturating_add(1)])
        .collect()
}

#[test]
fn a_firefox_index_damaged_in_any_block_answers_as_its_symbol_file() {
    if !ntdbg_testutil::testdata_available() {
        return;
    }
    let dir = scratch("firefox-blocks");
    let store =
        ntdbg_testutil::testdata("mozilla-minidump-stackwalk-pgo/pgo_data/symbols/wininet.pdb");
    ntdbg_testutil::decompressed_sym_store(&store, &dir);
    let id = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap();
    let key = id.file_name().to_string_lossy().into_owned();
    let source = id.path().join("wininet.sym");
    let full = Parsed::from_bytes(&std::fs::read(&source).unwrap()).unwrap();
    let cache = dir.join("cache");
    let slot = IndexSlot::new(&cache, "breakpad", &source, "wininet.pdb", &key).unwrap();
    slot.write(&full, &[]);
    let read_source = || -> ReadSource {
        let (source, key) = (source.clone(), key.clone());
        Box::new(move |slot| crate::load::read_sym_text(&source, &key, Some(slot)))
    };
    let (answered, blocks) =
        damage_every_block(&slot, &full, read_source, &addresses_of(&full, 40));
    assert!(
        answered > blocks / 2,
        "{answered} of {blocks} blocks damaged mid-session"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_pdb_index_damaged_in_any_block_answers_as_its_pdb() {
    if !ntdbg_testutil::testdata_available() {
        return;
    }
    let dir = scratch("pdb-blocks");
    let pdb = ntdbg_testutil::testdata("winelab/x64/crashy.pdb");
    let text = crate::source::pdb::pdb_to_breakpad_text(&pdb).unwrap();
    let key = Parsed::from_bytes(text.as_bytes()).unwrap().module_id;
    let want = PdbIdentity::new("crashy.pdb", PdbSignature::from_key(&key).unwrap());
    let (full, data) = crate::source::pdb::convert_pdb(&pdb, &want, None).unwrap();
    let slot = IndexSlot::new(&dir, "pdb", &pdb, "crashy.pdb", &key).unwrap();
    slot.write(&full, &data);
    let read_source = || -> ReadSource {
        let (pdb, want) = (pdb.clone(), want.clone());
        Box::new(move |slot| {
            crate::load::read_pdb_file(&pdb, &want, None, Some(slot)).map(|(tables, _)| tables)
        })
    };
    let (answered, blocks) = damage_every_block(&slot, &full, read_source, &addresses_of(&full, 3));
    assert!(
        answered > 0,
        "{answered} of {blocks} blocks damaged mid-session"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A Breakpad text of `n` functions, each with a line and a public symbol (an index of many
/// pages).
fn many_functions(n: usize) -> String {
    let mut text =
        String::from("MODULE windows x86 0123456789ABCDEF0123456789ABCDEF1 t.pdb\nFILE 0 a.c\n");
    for i in 0..n {
        let at = 0x1000 + i * 0x20;
        text.push_str(&format!(
            "FUNC {at:x} 20 0 function_number_{i}\n{at:x} 20 {i} 0\n"
        ));
    }
    for i in 0..n {
        text.push_str(&format!(
            "PUBLIC {:x} 0 public_number_{i}\n",
            0x1010 + i * 0x20
        ));
    }
    text
}

/// An index cut short while it is mapped (someone truncated the cache file): the pages past
/// the cut read as zeros instead of raising SIGBUS, so blocks checked before the cut could
/// answer wrong; the index counts as damaged from then on, lookups answer from the symbol
/// file, and the tables say that their file changed.
// Windows refuses to truncate a file that is mapped: the case cannot arise there.
#[cfg(unix)]
#[test]
fn an_index_cut_while_mapped_answers_as_its_symbol_file() {
    let _writes = WRITES.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("cut");
    let (cache, source) = (dir.join("cache"), dir.join("t.sym"));
    let text = many_functions(3000);
    std::fs::write(&source, &text).unwrap();
    let full = Parsed::from_bytes(text.as_bytes()).unwrap();
    let slot = slot(&cache, &source);
    slot.write(&full, &[]);
    let index = slot.open().unwrap();
    assert!(index.len() > 16 * 4096, "{} bytes", index.len());
    let read_from = source.clone();
    let read_source: ReadSource = Box::new(move |slot| {
        crate::load::read_sym_text(&read_from, "0123456789ABCDEF0123456789ABCDEF1", Some(slot))
    });
    let tables = Tables::Indexed(IndexedTables::new(index, slot.clone(), read_source));
    let addresses = addresses_of(&full, 97);
    let answers = |tables: &Tables| -> Vec<Vec<String>> {
        addresses.iter().map(|&a| fill(&tables.at(a), a)).collect()
    };
    let want: Vec<Vec<String>> = addresses.iter().map(|&a| fill(&full, a)).collect();
    assert_eq!(answers(&tables), want);
    assert!(tables.parsed().is_none(), "answered from the index");
    assert_eq!(tables.check_sources(), Ok(()));

    std::fs::OpenOptions::new()
        .write(true)
        .open(&slot.path)
        .unwrap()
        .set_len(4096)
        .unwrap();
    assert_eq!(answers(&tables), want);
    assert!(tables.parsed().is_some(), "answered from the symbol file");
    assert!(tables.check_sources().is_err());
    finish_index_writes();
    std::fs::remove_dir_all(&dir).unwrap();
}
