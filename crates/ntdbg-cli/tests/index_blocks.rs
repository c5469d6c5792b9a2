//! A warm symbol index whose blocks are damaged after it was written gives the same output as
//! no index at all: blocks checked on open refuse the index there; a block found damaged
//! mid-session drops it for that module (answered from its symbol file) and rebuilds it. Run
//! on every thread of the Firefox x86_64 dump (Breakpad texts) and on a crashy.exe dump (PDB).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Bytes of the index header; the body length is the u64 at 16, the block length the u32 at 28.
const HEADER_LEN: usize = 32;
/// Where the string blob's offset lies: the 13th entry of the directory after the header.
const STRINGS_ENTRY: usize = HEADER_LEN + 12 * 16;

/// `~*k` on `dump` with warnings logged: its stdout, and its stderr.
fn run_logged(dump: &Path, symbols: &Path, cache: &Path, index: bool) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .arg("run")
        .arg(dump)
        .args(["-c", "~*k", "--offline", "--symbols"])
        .arg(symbols)
        .env_remove("_NT_SYMBOL_PATH")
        .env("NTDBG_SYMBOL_CACHE", cache)
        .env("NTDBG_SYMBOL_INDEX", if index { "on" } else { "off" })
        // Indexes written before the run ends: no detached writer outlives the scratch folder.
        .env("NTDBG_SYMBOL_INDEX_WRITER", "thread")
        .env("NTDBG_LOG", "warn")
        .output()
        .expect("ntdbg runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).expect("UTF-8 output"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `~*k` on `dump`: its stdout.
fn run(dump: &Path, symbols: &Path, cache: &Path, index: bool) -> String {
    run_logged(dump, symbols, cache, index).0
}

fn indexes(cache: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache.join("index"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    found.retain(|p| p.extension().is_some_and(|e| e == "idx"));
    found.sort();
    found
}

/// The blocks of an index: (start in the file, length), the body's block by block.
fn blocks(bytes: &[u8]) -> Vec<(usize, usize)> {
    let body_len = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let block_len = u32::from_le_bytes(bytes[28..32].try_into().unwrap()) as usize;
    (0..body_len.div_ceil(block_len))
        .map(|b| {
            let start = HEADER_LEN + b * block_len;
            (start, block_len.min(HEADER_LEN + body_len - start))
        })
        .collect()
}

/// The blocks checked on open: the first (header side: directory, meta record) and the one
/// where the string blob starts (the index's identity).
fn checked_on_open(bytes: &[u8]) -> [usize; 2] {
    let block_len = u32::from_le_bytes(bytes[28..32].try_into().unwrap()) as usize;
    let strings = u64::from_le_bytes(bytes[STRINGS_ENTRY..STRINGS_ENTRY + 8].try_into().unwrap());
    [0, (strings as usize - HEADER_LEN) / block_len]
}

/// Which blocks of an index to damage: given its bytes, the block's number and the count.
type Choice = fn(&[u8], usize, usize) -> bool;

/// Flips one byte in each chosen block of every index; returns the damaged files and their
/// bytes (indexes with no block chosen are left alone and not returned).
fn damage(cache: &Path, choose: Choice) -> Vec<(PathBuf, Vec<u8>)> {
    indexes(cache)
        .into_iter()
        .map(|path| {
            let mut bytes = std::fs::read(&path).unwrap();
            let (all, original) = (blocks(&bytes), bytes.clone());
            for (b, (start, len)) in all.iter().enumerate() {
                if choose(&original, b, all.len()) {
                    bytes[start + (b * 7919) % len] ^= 0x5a;
                }
            }
            std::fs::write(&path, &bytes).unwrap();
            (path, bytes, original)
        })
        .filter(|(_, bytes, original)| bytes != original)
        .map(|(path, bytes, _)| (path, bytes))
        .collect()
}

/// Cold run, then warm runs over indexes damaged in every block not checked on open (so any
/// index rebuilt was found damaged mid-session), in the last block only, and in every block:
/// each gives the index-off output, and indexes are rebuilt.
fn damaged_indexes_answer_as_no_index(dump: &Path, symbols: &Path, scratch: &Path) {
    let expected = run(dump, symbols, &scratch.join("off"), false);
    assert!(expected.contains('!'), "symbolized frames expected");
    let cache = scratch.join("cache");
    assert_eq!(run(dump, symbols, &cache, true), expected, "cold");
    assert!(!indexes(&cache).is_empty(), "the cold run wrote indexes");
    let choices: [(&str, Choice); 3] = [
        ("every block not checked on open", |bytes, b, _| {
            !checked_on_open(bytes).contains(&b)
        }),
        ("the last block", |_, b, n| b + 1 == n),
        ("every block", |_, _, _| true),
    ];
    for (what, choose) in choices {
        let damaged = damage(&cache, choose);
        let (output, log) = run_logged(dump, symbols, &cache, true);
        assert_eq!(output, expected, "{what} damaged");
        let rebuilt = damaged
            .iter()
            .filter(|(path, bytes)| std::fs::read(path).is_ok_and(|now| &now != bytes))
            .count();
        assert!(
            damaged.is_empty() || rebuilt > 0,
            "{what} damaged: no index rebuilt"
        );
        // A damaged block is said, with NTDBG_LOG, not passed over silently.
        assert_eq!(
            log.contains("failed its check"),
            rebuilt > 0,
            "{what} damaged: {log}"
        );
        assert_eq!(
            run(dump, symbols, &cache, true),
            expected,
            "{what}: rebuilt"
        );
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ntdbg-index-blocks-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn firefox_indexes_damaged_block_by_block_answer_as_no_index() {
    ntdbg_testutil::require_testdata!();
    let pgo = ntdbg_testutil::testdata("mozilla-minidump-stackwalk-pgo/pgo_data");
    let dir = scratch("firefox");
    let plain = dir.join("symbols");
    std::fs::create_dir_all(&plain).unwrap();
    ntdbg_testutil::decompressed_sym_store(&pgo.join("symbols"), &plain);
    let dump = pgo.join("minidumps/windows-x86_64.dmp");
    damaged_indexes_answer_as_no_index(&dump, &plain, &dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_pdb_index_damaged_block_by_block_answers_as_no_index() {
    ntdbg_testutil::require_testdata!();
    let dir = scratch("pdb");
    let dump = ntdbg_testutil::testdata("winelab/x64/breakpoint.aedebug.dmp");
    let symbols = ntdbg_testutil::testdata("winelab/x64");
    damaged_indexes_answer_as_no_index(&dump, &symbols, &dir);
    std::fs::remove_dir_all(&dir).unwrap();
}
