//! The lazy PDB answers every address as the whole conversion does; damaged PDBs give errors.

use std::path::{Path, PathBuf};

use breakpad_symbols::{FrameSymbolizer, SimpleModule, SymbolFile};
use ntdbg_formats::store::{PdbIdentity, PdbSignature};
use pdb_addr2line::pdb::PDB;

use super::LazyPdb;
use crate::pdb_sym::read_identity;
use crate::source::pdb::convert_pdb;

/// Everything `fill_symbol` reports for one address.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    instruction: u64,
    function: Option<(String, u64, u32)>,
    source: Option<(String, u32, u64)>,
    inlines: Vec<(String, Option<String>, Option<u32>)>,
}

impl FrameSymbolizer for Seen {
    fn get_instruction(&self) -> u64 {
        self.instruction
    }
    fn set_function(&mut self, name: &str, base: u64, parameter_size: u32) {
        self.function = Some((name.to_string(), base, parameter_size));
    }
    fn set_source_file(&mut self, file: &str, line: u32, base: u64) {
        self.source = Some((file.to_string(), line, base));
    }
    fn add_inline_frame(&mut self, name: &str, file: Option<&str>, line: Option<u32>) {
        self.inlines
            .push((name.to_string(), file.map(str::to_string), line));
    }
}

fn seen(symbols: &SymbolFile, rva: u64) -> Seen {
    let mut s = Seen {
        instruction: rva,
        ..Seen::default()
    };
    symbols.fill_symbol(&SimpleModule::default(), &mut s);
    s
}

/// The identity the PDB at `path` records about itself.
fn own_identity(path: &Path) -> PdbIdentity {
    let mut pdb = PDB::open(std::fs::File::open(path).unwrap()).unwrap();
    let own = read_identity(&mut pdb).unwrap();
    PdbIdentity::new(
        &path.file_name().unwrap().to_string_lossy(),
        PdbSignature::Pdb70 {
            guid: own.guid,
            age: own.age(),
        },
    )
}

/// The repository's sample PDB and every PDB of the shared corpus.
fn pdbs() -> Vec<PathBuf> {
    let mut out = vec![ntdbg_testutil::repo_root().join("testdata/crashy.pdb")];
    if let Some(dir) = ntdbg_testutil::testdata_dir() {
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x.eq_ignore_ascii_case("pdb")) {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// The addresses where an answer can change: every record's first and last byte and the
/// bytes either side (functions, their line records and inline ranges, publics), plus every
/// `STRIDE`th address from 0 to past the last record.
fn probes(whole: &SymbolFile) -> Vec<u64> {
    const STRIDE: u64 = 61;
    let mut edges = Vec::new();
    let mut range = |start: u64, end: u64| {
        edges.extend([
            start.saturating_sub(1),
            start,
            start + 1,
            end.saturating_sub(1),
            end,
        ]);
    };
    for (r, f) in whole.functions.ranges_values() {
        range(r.start, r.end + 1);
        for (l, _) in f.lines.ranges_values() {
            range(l.start, l.end + 1);
        }
        for i in &f.inlinees {
            range(i.address, i.address + u64::from(i.size));
        }
    }
    for p in &whole.publics {
        range(p.address, p.address + 1);
    }
    let last = edges.iter().copied().max().unwrap_or(0) + 0x40;
    // At most about 20,000 evenly spaced probes (OMAP test PDBs reach 32 MiB).
    edges.extend((0..last).step_by(STRIDE.max(last / 20_000) as usize));
    edges.sort_unstable();
    edges.dedup();
    edges
}

/// Compares lazy and whole answers at every [`probes`] address; returns how many there were.
fn compare(path: &Path) -> usize {
    let want = own_identity(path);
    let whole = match convert_pdb(path, &want, None) {
        Ok((w, _)) => w,
        // PDBs the whole conversion refuses are the damaged-input tests' business.
        Err(_) => return 0,
    };
    let (lazy, _) = LazyPdb::open(path, &want, None).expect("lazy open");
    let probes = probes(&whole);
    for &rva in &probes {
        let (a, b) = (seen(&whole, rva), seen(&lazy.at(rva), rva));
        assert_eq!(a, b, "{} at {rva:#x}", path.display());
    }
    probes.len()
}

#[test]
fn lazy_and_whole_answer_alike_at_every_record_edge() {
    let mut compared = 0;
    for path in pdbs() {
        let n = compare(&path);
        eprintln!("{}: {n} addresses", path.display());
        compared += n;
    }
    assert!(compared > 0);
}

#[test]
fn damaged_pdbs_give_errors_not_panics() {
    let source = ntdbg_testutil::repo_root().join("testdata/crashy.pdb");
    let bytes = std::fs::read(&source).unwrap();
    let want = own_identity(&source);
    let dir = std::env::temp_dir().join(format!("ntdbg-lazy-pdb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("crashy.pdb");
    // Cut short: the header or directory gone is an error naming the file; cut later,
    // opening may succeed (what is left is read), and lookups answer without a panic.
    for len in [
        0,
        100,
        4096,
        bytes.len() / 3,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        std::fs::write(&path, &bytes[..len]).unwrap();
        match LazyPdb::open(&path, &want, None) {
            Err(e) => assert!(e.to_string().contains("crashy.pdb"), "{e}"),
            Ok((lazy, _)) => {
                assert!(len > 4096, "truncated to {len} bytes opened");
                for rva in (0..0x20000).step_by(0x10) {
                    let _ = seen(&lazy.at(rva), rva);
                }
            }
        }
    }
    // Bytes overwritten through the middle: an error, or lookups that answer without a panic.
    for at in (bytes.len() / 8..bytes.len()).step_by(bytes.len() / 8) {
        let mut damaged = bytes.clone();
        for b in damaged.iter_mut().skip(at).take(4096) {
            *b = 0xa5;
        }
        std::fs::write(&path, &damaged).unwrap();
        if let Ok((lazy, _)) = LazyPdb::open(&path, &want, None) {
            for rva in (0..0x20000).step_by(0x10) {
                let _ = seen(&lazy.at(rva), rva);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
