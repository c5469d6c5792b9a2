//! Compressed Breakpad symbols give the same stacks as plain ones: every thread of the Firefox
//! dumps (`~*k`, text and JSON) with the `.sym.xz` files, the first time (decompressed) and the
//! second (the decompressed copy in the symbol cache), byte for byte against the plain `.sym`;
//! a first run leaves the warm index of the files it read lazily (Breakpad texts, PDBs) to the
//! detached writer.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(dump: &Path, symbols: &Path, cache: &Path, json: bool) -> String {
    let mut args = vec![
        "run".to_string(),
        dump.display().to_string(),
        "-c".to_string(),
        "~*k".to_string(),
        "--offline".to_string(),
        "--symbols".to_string(),
        symbols.display().to_string(),
    ];
    if json {
        args.push("--json".to_string());
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(&args)
        .env_remove("_NT_SYMBOL_PATH")
        .env("NTDBG_SYMBOL_CACHE", cache)
        // Indexes written before the run ends: no detached writer outlives the scratch folder.
        .env("NTDBG_SYMBOL_INDEX_WRITER", "thread")
        .output()
        .expect("ntdbg runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn copies(cache: &Path) -> usize {
    std::fs::read_dir(cache.join("unpacked-sym")).map_or(0, |d| d.count())
}

#[test]
fn firefox_stacks_are_the_same_with_plain_and_compressed_symbols() {
    ntdbg_testutil::require_testdata!();
    let pgo = ntdbg_testutil::testdata("mozilla-minidump-stackwalk-pgo/pgo_data");
    let scratch = ntdbg_testutil::fresh_dir("xz-symbols");
    let plain = scratch.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    ntdbg_testutil::decompressed_sym_store(&pgo.join("symbols"), &plain);
    for dump in ["windows-x86_64.dmp", "windows-aarch64.dmp"] {
        let dump: PathBuf = pgo.join("minidumps").join(dump);
        for json in [false, true] {
            let cache = scratch.join(format!("cache-{json}"));
            let _ = std::fs::remove_dir_all(&cache);
            let expected = run(&dump, &plain, &cache, json);
            assert_eq!(copies(&cache), 0, "plain symbols need no copy");
            assert!(expected.contains('!'), "symbolized frames expected");
            let first = run(&dump, &pgo.join("symbols"), &cache, json);
            assert!(
                copies(&cache) > 0,
                "the first load keeps decompressed copies"
            );
            let second = run(&dump, &pgo.join("symbols"), &cache, json);
            assert!(
                first == expected,
                "{}: .sym.xz differs from .sym",
                dump.display()
            );
            assert!(
                second == expected,
                "{}: the cached copy differs",
                dump.display()
            );
        }
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// Whether a process that writes into `cache` still runs: the detached index writers inherit
/// the `NTDBG_SYMBOL_CACHE` of the run that started them.
fn writers_running(cache: &Path) -> bool {
    let wanted = format!("NTDBG_SYMBOL_CACHE={}\0", cache.display()).into_bytes();
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return false;
    };
    processes.flatten().any(|p| {
        std::fs::read(p.path().join("environ"))
            .is_ok_and(|env| env.windows(wanted.len()).any(|w| w == wanted.as_slice()))
    })
}

/// How many indexes are in the cache once every detached writer has ended and no temporary
/// file is left (at most two minutes: a hang guard).
fn settled_indexes(cache: &Path) -> usize {
    let count = || {
        std::fs::read_dir(cache.join("index")).map_or((0, 0), |d| {
            let names: Vec<String> = d
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            let temps = names.iter().filter(|n| n.starts_with(".tmp")).count();
            (names.len() - temps, temps)
        })
    };
    let start = std::time::Instant::now();
    loop {
        // Counted after the writers were seen gone: nothing can change the folder since.
        let running = writers_running(cache);
        let (indexes, temps) = count();
        if !running && temps == 0 || start.elapsed() > std::time::Duration::from_secs(120) {
            return indexes;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn a_first_run_leaves_the_index_to_detached_writers_and_the_next_run_maps_it() {
    ntdbg_testutil::require_testdata!();
    let pgo = ntdbg_testutil::testdata("mozilla-minidump-stackwalk-pgo/pgo_data");
    let scratch = ntdbg_testutil::fresh_dir("xz-detached");
    let cache = scratch.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let dump = pgo.join("minidumps/windows-x86_64.dmp");
    let ntdbg = |cache: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
            .args(["run", &dump.display().to_string(), "-c", "~*k", "--offline"])
            .arg("--symbols")
            .arg(pgo.join("symbols"))
            .env_remove("_NT_SYMBOL_PATH")
            .env_remove("NTDBG_SYMBOL_INDEX_WRITER")
            .env_remove("NTDBG_BREAKPAD_LAZY")
            .env("NTDBG_SYMBOL_CACHE", cache)
            .output()
            .expect("ntdbg runs");
        assert!(out.status.success());
        String::from_utf8(out.stdout).expect("UTF-8 output")
    };
    let first = ntdbg(&cache);
    let written = settled_indexes(&cache);
    assert!(
        written >= 5,
        "{written} indexes written by detached writers"
    );
    let warm = ntdbg(&cache);
    assert!(warm == first, "the warm run differs from the first");
    assert_eq!(settled_indexes(&cache), written, "nothing rewritten");
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn a_lazily_converted_pdb_gets_its_index_from_the_detached_writer() {
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    let dump = testdata.join("crashy-x64-null.dmp");
    let scratch = ntdbg_testutil::fresh_dir("pdb-detached");
    let cache = scratch.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let ntdbg = || {
        let out = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
            .args(["run", &dump.display().to_string(), "-c", "kn; ln @$scopeip"])
            .arg("--offline")
            .env_remove("_NT_SYMBOL_PATH")
            .env_remove("NTDBG_SYMBOL_INDEX_WRITER")
            .env_remove("NTDBG_SYMBOL_INDEX")
            // crashy.pdb is small: converted lazily only when asked.
            .env("NTDBG_PDB_LAZY", "always")
            .env("NTDBG_SYMBOL_CACHE", &cache)
            .output()
            .expect("ntdbg runs");
        assert!(out.status.success());
        String::from_utf8(out.stdout).expect("UTF-8 output")
    };
    let first = ntdbg();
    assert!(first.contains("crashy!write_null"), "{first}");
    let written = settled_indexes(&cache);
    assert!(
        written >= 1,
        "{written} indexes written by the detached writer"
    );
    let warm = ntdbg();
    assert!(warm == first, "the warm run differs from the first");
    assert_eq!(settled_indexes(&cache), written, "nothing rewritten");
    std::fs::remove_dir_all(&scratch).unwrap();
}
