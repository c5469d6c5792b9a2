//! The lazy reader answers every address exactly as the whole parse, on the index's
//! synthetic text and on every Breakpad file of the shared corpus; texts outside the plain
//! shape are handed back for the whole parse; damaged texts never panic.

use std::path::{Path, PathBuf};

use breakpad_symbols::SymbolFile;

use super::scan::scan;
use super::LazyBreakpad;
use crate::index::tests::{assert_same_records_at, fill, TEXT};

/// The addresses worth asking about: every record's start and end, and around them.
fn addresses(full: &SymbolFile) -> Vec<u64> {
    let mut out = vec![0, 1, u64::MAX, u64::MAX - 1];
    let mut around = |a: u64| out.extend([a.saturating_sub(1), a, a.saturating_add(1)]);
    for (r, f) in full.functions.ranges_values() {
        around(r.start);
        around(r.end);
        around(r.start + (r.end - r.start) / 2);
        f.lines.ranges_values().for_each(|(r, _)| around(r.start));
        f.inlinees.iter().for_each(|x| around(x.address));
    }
    for p in &full.publics {
        around(p.address);
    }
    for (r, _) in full
        .win_stack_framedata_info
        .ranges_values()
        .chain(full.win_stack_fpo_info.ranges_values())
    {
        around(r.start);
        around(r.end);
    }
    for (r, c) in full.cfi_stack_info.ranges_values() {
        around(r.start);
        around(r.end);
        c.add_rules.iter().for_each(|a| around(a.address));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Asserts that `lazy` answers as `full` at every address worth asking about; returns how
/// many addresses were compared.
fn assert_same(lazy: &LazyBreakpad, full: &SymbolFile, what: &str) -> usize {
    assert_eq!(lazy.module_id(), full.module_id, "{what}");
    let addresses = addresses(full);
    for &addr in &addresses {
        let small = lazy.symbols_at(addr);
        assert_eq!(fill(&small, addr), fill(full, addr), "{what} at {addr:#x}");
        assert_same_records_at(&small, full, addr, what);
        let want = full.functions.get(addr).map(|f| (f.address, f.size));
        assert_eq!(lazy.function_at(addr), want, "{what} at {addr:#x}");
    }
    let functions: Vec<(String, u64, u32)> = full
        .functions
        .ranges_values()
        .map(|(_, f)| (f.name.clone(), f.address, f.size))
        .collect();
    let lazy_functions: Vec<(String, u64, u32)> = lazy
        .functions()
        .map(|(n, a, s)| (n.to_string(), a, s))
        .collect();
    assert_eq!(lazy_functions, functions, "{what}: functions");
    let publics: Vec<(String, u64)> = full
        .publics
        .iter()
        .map(|p| (p.name.clone(), p.address))
        .collect();
    let lazy_publics: Vec<(String, u64)> =
        lazy.publics().map(|(n, a)| (n.to_string(), a)).collect();
    assert_eq!(lazy_publics, publics, "{what}: publics");
    addresses.len()
}

fn lazy(text: &[u8]) -> LazyBreakpad {
    LazyBreakpad::new(text.to_vec().into()).unwrap_or_else(|(_, why)| panic!("not lazy: {why:?}"))
}

#[test]
fn the_synthetic_file_answers_as_the_whole_parse() {
    let text = TEXT.to_string();
    let full = SymbolFile::from_bytes(text.as_bytes()).unwrap();
    assert_same(&lazy(text.as_bytes()), &full, "synthetic");
    // The same with CRLF line ends.
    let crlf = text.replace('\n', "\r\n");
    let full = SymbolFile::from_bytes(crlf.as_bytes()).unwrap();
    assert_same(&lazy(crlf.as_bytes()), &full, "synthetic CRLF");
}

#[test]
fn overlaps_duplicates_and_records_out_of_order_resolve_as_the_parser_does() {
    let text = "MODULE windows x86_64 AB t.pdb\n\
FILE 1 first.c\nFILE 1 second.c\n\
FUNC 2000 10 0 late\n2000 10 1 1\n\
FUNC 1000 20 0 early\n1000 20 2 1\nINLINE_ORIGIN 3 old\nINLINE 0 5 1 3 1004 4\n\
FUNC 1010 20 0 overlaps_early\n1010 20 3 1\n\
FUNC 1000 20 0 same_range_other_name\n\
FUNC 3000 0 0 empty\nFUNC ffffffffffffffff 2 0 past_the_end\n\
INLINE_ORIGIN 3 new\n\
STACK CFI INIT 1000 10 .cfa: $rsp 8 + .ra: .cfa -8 + ^\nSTACK CFI 1008 .cfa: $rsp 16 +\n\
STACK CFI 1004 .cfa: $rsp 24 +\n\
STACK CFI INIT 1008 10 .cfa: $rsp 8 +\n\
STACK WIN 4 1000 20 0 0 4 0 0 0 1 $T0 .raSearch =\nSTACK WIN 4 1008 8 0 0 8 0 0 0 1 $T1 .raSearch =\n\
STACK WIN 4 1004 4 0 0 8 0 0 0 1 dropped\nSTACK WIN 4 1010 4 0 0 8 0 0 0 1 $T2 .raSearch =\n\
STACK WIN 4 1010 4 0 0 8 0 0 0 1 same_range\nSTACK WIN 0 2000 10 0 0 0 0 0 0 0 1\n\
STACK WIN 0 2004 4 0 0 0 0 0 0 0 0\nSTACK WIN 0 3000 0 0 0 0 0 0 0 0 0\nSTACK WIN 4 5000 8 0 0 0 0 0 0 0 x\n\
STACK WIN 1 6000 8 0 0 0 0 0 0 0 0\n\
PUBLIC 1800 0 b\nPUBLIC 1800 0 a\nPUBLIC m 1800 4 a\nPUBLIC 500 0 low\n\n\
FILE 2  \t spaced.c\nPUBLIC 1900\t0  \t blank_separated\nFUNC  5000 \t8 0   spaced\n5000 8 1\t2\nINLINE_ORIGIN\t9 tabbed\n\
FUNC 4000 8 0 after_blank_line\n";
    let full = SymbolFile::from_bytes(text.as_bytes()).unwrap();
    let n = assert_same(&lazy(text.as_bytes()), &full, "overlaps");
    assert!(n > 20);
}

#[test]
fn every_breakpad_file_of_the_corpus_answers_as_the_whole_parse() {
    let Some(root) = ntdbg_testutil::testdata_dir() else {
        eprintln!("shared test data not found: skipped");
        return;
    };
    let mut files = Vec::new();
    collect(&root, &mut files);
    assert!(!files.is_empty());
    let (mut lazy_files, mut whole_files, mut compared) = (0, 0, 0);
    for path in files {
        let text = read_text(&path);
        let full = SymbolFile::from_bytes(&text);
        match LazyBreakpad::new(text.into()) {
            Ok(lazy) => {
                let full = full.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                compared += assert_same(&lazy, &full, &path.display().to_string());
                lazy_files += 1;
            }
            Err((_, why)) => {
                eprintln!("{}: whole parse ({why:?})", path.display());
                whole_files += 1;
            }
        }
    }
    eprintln!(
        "{lazy_files} files lazy ({compared} addresses identical), {whole_files} parsed whole"
    );
    assert!(lazy_files >= 30, "{lazy_files} files read lazily");
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            let name = path.to_string_lossy();
            if name.ends_with(".sym") || name.ends_with(".sym.xz") {
                out.push(path);
            }
        }
    }
}

fn read_text(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap();
    if !path.to_string_lossy().ends_with(".xz") {
        return raw;
    }
    let mut text = Vec::new();
    std::io::Read::read_to_end(
        &mut crate::compressed::xz_reader(&raw[..]).unwrap(),
        &mut text,
    )
    .unwrap();
    text
}

#[test]
fn texts_outside_the_plain_shape_go_to_the_whole_parse() {
    let good = TEXT.to_string();
    assert!(scan(good.as_bytes()).is_ok());
    let cases: Vec<(String, &str)> = vec![
        (good.trim_end().to_string(), "no newline at the end"),
        (format!("{good}FUNC 1 1 0\n"), "FUNC"),
        (
            good.replace("FUNC 1000 40", "FUNC 11111111111111111 40"),
            "FUNC",
        ),
        (good.replace("FUNC 1000 40", "FUNC 1000 111111111"), "FUNC"),
        (format!("{good}FILE 99999999999 x\n"), "FILE"),
        (format!("{good}FILE 4294967296 x\n"), "FILE"),
        (
            format!("{good}1000 10 3 0\n"),
            "a line the scan does not know",
        ),
        (
            format!("{good}STACK WIN 4 1100 10 1 0 4 0 0 0 0\n"),
            "STACK WIN",
        ),
        (
            format!("{good}STACK WIN x 1100 10 1 0 4 0 0 0 0 1\n"),
            "STACK WIN",
        ),
        (
            format!("{good}MODULE windows x86 AB t.pdb\n"),
            "a line the scan does not know",
        ),
        (
            format!("{good}PUBLIC 10 0 a\rb\n"),
            "carriage return inside a line",
        ),
        (format!("\n{good}"), "no MODULE line first"),
        (
            format!("{good}PUBLIC 10 0 {}\n", "x".repeat(70_000)),
            "line too long",
        ),
        (
            good.replace("1010 20 4 7", "1010 20 4 7 "),
            "a line the scan does not know",
        ),
        (
            good.replace("INLINE 0 3 0 0 1010 20", "INLINE 0 3 0 0 1010 20 "),
            "INLINE",
        ),
    ];
    for (text, reason) in cases {
        let why = scan(text.as_bytes()).expect_err(&text);
        assert_eq!(why.reason, reason, "{text}");
    }
    let mut bytes = good.clone().into_bytes();
    bytes.extend_from_slice(b"FILE 9 \xff\n");
    assert_eq!(scan(&bytes).unwrap_err().reason, "not UTF-8");
}

/// Truncated and damaged texts: the scan never panics, and whatever it accepts answers as
/// the whole parse.
#[test]
fn damaged_texts_never_panic_and_accepted_ones_answer_as_the_whole_parse() {
    let good = TEXT.to_string().into_bytes();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut variants: Vec<Vec<u8>> = (0..good.len()).map(|n| good[..n].to_vec()).collect();
    for round in 0..3000 {
        let mut bad = good.clone();
        for _ in 0..1 + round % 4 {
            let at = (next() as usize) % bad.len();
            bad[at] = b" \n\r0fF9gxm.\t\xff"[(next() as usize) % 13];
        }
        variants.push(bad);
    }
    let mut accepted = 0;
    for text in variants {
        let full = SymbolFile::from_bytes(&text);
        if let Ok(lazy) = LazyBreakpad::new(text.clone().into()) {
            let full = full.unwrap_or_else(|e| {
                panic!(
                    "accepted, but the parser refuses: {e}\n{}",
                    String::from_utf8_lossy(&text)
                )
            });
            assert_same(&lazy, &full, &String::from_utf8_lossy(&text));
            accepted += 1;
        }
    }
    assert!(accepted > 100, "{accepted} damaged texts accepted");
}
