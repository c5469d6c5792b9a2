//! Replays a fixed command list on every dump of the shared corpus (`../shared/testdata`, when
//! present) and of the repository's `testdata/`, and compares each output with the one saved
//! before a refactoring, so text that should not change stays byte-identical.
//!
//! The saved outputs are stored compactly as one SHA-256 per (dump, command) in
//! `tests/replay/expected.tsv`. `NTDBG_REPLAY_BLESS=1` rewrites that file from the binary under
//! test (or from `NTDBG_REPLAY_BIN`, e.g. a build of the previous commit). On a mismatch the
//! failure names the command and, when a binary built before the change is at
//! `NTDBG_REPLAY_BEFORE` (default `/tmp/ntdbg-before-h14c`), the diff between its output and
//! the new one.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// Dumps larger than this are left out, to keep the replay quick.
const MAX_DUMP_BYTES: u64 = 40 << 20;
/// Deepest folder level searched below each root.
const MAX_DEPTH: usize = 12;
/// The binary built before the change, used only to show a diff on failure.
const DEFAULT_BEFORE: &str = "/tmp/ntdbg-before-h14c";

/// The fixed command list: `ntdbg` arguments after the dump path. Each `run` batch stops at its
/// first failure, so the commands most likely to fail on some dump get their own batch.
const COMMANDS: &[&[&str]] = &[
    &["analyze", "--json"],
    &["run", "-c", "lm; ~*k"],
    &["run", "-c", "u @$ip L8"],
    &["run", "-c", "x *!*main*"],
    &["run", "-c", "x /t *!*g_*; x /t *!*crash*"],
    &[
        "run",
        "-c",
        "dt -r1 _EXCEPTION_POINTERS @$csp; dt -v -a2 _EXCEPTION_RECORD @$ip",
    ],
];

/// One dump to replay: its key in the expected file and its path.
struct Dump {
    key: String,
    path: PathBuf,
}

/// The file that holds the saved hashes.
fn expected_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replay/expected.tsv")
}

/// Whether the file starts like a user-mode minidump or a kernel dump.
fn is_dump(path: &Path) -> bool {
    let mut magic = [0u8; 8];
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    if file.read_exact(&mut magic).is_err() {
        return false;
    }
    magic.starts_with(b"MDMP") || &magic == b"PAGEDU64" || &magic == b"PAGEDUMP"
}

/// Every dump under `root` (bounded depth, no symlinked folders followed), keyed by
/// `prefix/relative/path`.
fn walk(root: &Path, prefix: &str, out: &mut Vec<Dump>) {
    let mut pending = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() && depth < MAX_DEPTH {
                pending.push((path, depth + 1));
            } else if kind.is_file()
                && entry.metadata().map(|m| m.len()).unwrap_or(u64::MAX) <= MAX_DUMP_BYTES
                && is_dump(&path)
            {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                out.push(Dump {
                    key: format!("{prefix}/{}", rel.display()),
                    path: path.canonicalize().unwrap_or(path),
                });
            }
        }
    }
}

/// The dumps to replay, sorted by key, and whether the shared corpus was found.
fn dumps() -> (Vec<Dump>, bool) {
    let mut out = Vec::new();
    let shared = ntdbg_testutil::testdata_dir();
    if let Some(dir) = &shared {
        walk(dir, "shared", &mut out);
    }
    walk(
        &ntdbg_testutil::repo_root().join("testdata"),
        "repo",
        &mut out,
    );
    out.sort_by(|a, b| a.key.cmp(&b.key));
    (out, shared.is_some())
}

/// A command's label in the expected file.
fn label(command: &[&str]) -> String {
    command.join(" ")
}

/// Runs `binary` on `dump` with `command`; the exit code, stdout and stderr, with the dump's
/// path and folder replaced by placeholders so the text does not depend on the checkout.
fn replay(binary: &Path, dump: &Dump, command: &[&str]) -> String {
    replay_with(binary, dump, command, &[])
}

/// The symbol cache of rows that name none: under the target folder, never the user's.
fn replay_symbol_cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("replay-symbol-cache")
}

/// [`replay`] with extra environment variables.
fn replay_with(binary: &Path, dump: &Dump, command: &[&str], env: &[(&str, &Path)]) -> String {
    let mut args: Vec<&str> = vec![command[0]];
    let path = dump.path.display().to_string();
    args.push(&path);
    args.push("--offline");
    args.extend_from_slice(&command[1..]);
    let output = Command::new(binary)
        .args(&args)
        .env_remove("_NT_SYMBOL_PATH")
        .env_remove("NTDBG_SYMBOL_CACHE")
        .env_remove("NTDBG_SYMBOL_INDEX")
        .env_remove("NTDBG_SYMBOL_INDEX_WRITER")
        .env_remove("NTDBG_BREAKPAD_LAZY")
        .env_remove("NTDBG_PDB_LAZY")
        .env_remove("NTDBG_LOG")
        // The user's own cache is left alone: rows share one under the target folder.
        .env("NTDBG_SYMBOL_CACHE", replay_symbol_cache())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap_or_else(|e| panic!("{} does not run: {e}", binary.display()));
    let text = format!(
        "exit: {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let folder = dump
        .path
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let text = text.replace(&path, "<DUMP>");
    if folder.is_empty() {
        text
    } else {
        text.replace(&folder, "<DIR>")
    }
}

fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Runs every (dump, command) pair on a few threads; outputs in the order of `jobs`.
fn replay_all(binary: &Path, jobs: &[(&Dump, &[&str])]) -> Vec<String> {
    let results = Mutex::new(vec![String::new(); jobs.len()]);
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((dump, command)) = jobs.get(i) else {
                    break;
                };
                let text = replay(binary, dump, command);
                results.lock().unwrap()[i] = text;
            });
        }
    });
    results.into_inner().unwrap()
}

/// The saved hashes: (dump key, command label) → SHA-256.
fn read_expected() -> BTreeMap<(String, String), String> {
    let text = std::fs::read_to_string(expected_file()).unwrap_or_default();
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut parts = l.split('\t');
            let (dump, command, hash) = (parts.next()?, parts.next()?, parts.next()?);
            Some(((dump.to_string(), command.to_string()), hash.to_string()))
        })
        .collect()
}

fn write_expected(rows: &[(String, String, String)]) {
    let mut text = String::from(
        "# SHA-256 of `ntdbg <cmd> DUMP --offline <args>` output (exit code, stdout, stderr;\n\
         # paths replaced), per dump and command. Regenerate: NTDBG_REPLAY_BLESS=1\n\
         # cargo test -p ntdbg-cli --test cli replay_fixed_commands::\n",
    );
    for (dump, command, hash) in rows {
        text.push_str(&format!("{dump}\t{command}\t{hash}\n"));
    }
    let path = expected_file();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
}

#[test]
fn fixed_commands_give_the_saved_output_on_every_dump() {
    let (dumps, shared) = dumps();
    // A test binary built for another checkout (a shared target dir) looks for that checkout's
    // testdata/: finding nothing must fail, not pass without replaying anything.
    assert!(
        dumps.iter().any(|d| d.key.starts_with("repo/")),
        "no dump found under {}",
        ntdbg_testutil::repo_root().join("testdata").display()
    );
    if !shared {
        eprintln!(
            "SKIPPED: shared test corpus not found; replaying the repository's testdata/ only"
        );
    }
    let jobs: Vec<(&Dump, &[&str])> = dumps
        .iter()
        .flat_map(|d| COMMANDS.iter().map(move |c| (d, *c)))
        .collect();
    let binary = std::env::var_os("NTDBG_REPLAY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ntdbg")));
    let outputs = replay_all(&binary, &jobs);
    let rows: Vec<(String, String, String)> = jobs
        .iter()
        .zip(&outputs)
        .map(|((dump, command), text)| (dump.key.clone(), label(command), sha256(text)))
        .collect();

    if std::env::var_os("NTDBG_REPLAY_BLESS").is_some() {
        write_expected(&rows);
        eprintln!(
            "wrote {} hashes to {}",
            rows.len(),
            expected_file().display()
        );
        return;
    }

    let expected = read_expected();
    let mut failures = Vec::new();
    for (i, (dump, command, hash)) in rows.iter().enumerate() {
        match expected.get(&(dump.clone(), command.clone())) {
            Some(saved) if saved == hash => {}
            Some(_) => failures.push((i, "output changed")),
            None => failures.push((i, "no saved hash (bless with NTDBG_REPLAY_BLESS=1)")),
        }
    }
    if let Some(&(first, why)) = failures.first() {
        let (dump, command) = jobs[first];
        let before = std::env::var_os("NTDBG_REPLAY_BEFORE")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_BEFORE));
        let detail = if before.is_file() {
            let old = replay(&before, dump, command);
            format!(
                "diff against {}:\n{}",
                before.display(),
                similar::TextDiff::from_lines(&old, &outputs[first])
                    .unified_diff()
                    .header("before", "now")
            )
        } else {
            format!(
                "(no binary at {} to diff against) output now:\n{}",
                before.display(),
                outputs[first]
            )
        };
        panic!(
            "{} of {} replays differ; first: `ntdbg {} {} --offline {}` ({why})\n{detail}",
            failures.len(),
            rows.len(),
            command[0],
            dump.key,
            command[1..].join(" "),
        );
    }
    eprintln!("{} replays match the saved output", rows.len());
}

/// The commands compared with and without the warm symbol index: stacks, disassembly,
/// nearest symbols, module list, symbol search and the analysis.
const INDEX_COMMANDS: &[&[&str]] = &[
    &["analyze", "--json"],
    &["run", "-c", "lm; ~*k; kb; ln @$scopeip; u @$scopeip L4"],
    &["run", "-c", "x *!*main*"],
];

/// Issue 20: every command's output is byte-identical whether the symbols were read as by
/// default and indexed (a fresh cache: cold; large Breakpad files read lazily, the index
/// written on a thread so that it is there when the run ends), read from the index (the same
/// cache again: warm), parsed whole (index and lazy reading off), read lazily whatever their
/// size (index off, `NTDBG_BREAKPAD_LAZY=always`), or with every PDB converted one procedure
/// at a time (index off, `NTDBG_PDB_LAZY=always`). Dumps whose cold run wrote no index load
/// no symbol file and are not rerun.
#[test]
fn output_is_identical_cold_warm_and_without_the_symbol_index() {
    let (dumps, _) = dumps();
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_ntdbg"));
    let scratch = std::env::temp_dir().join(format!("ntdbg-index-replay-{}", std::process::id()));
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let (indexed, compared) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(dump) = dumps.get(i) else {
                    break;
                };
                let cache = scratch.join(i.to_string());
                let (off, thread, always) =
                    (Path::new("off"), Path::new("thread"), Path::new("always"));
                let with_cache = [
                    ("NTDBG_SYMBOL_CACHE", cache.as_path()),
                    ("NTDBG_SYMBOL_INDEX_WRITER", thread),
                ];
                let without = [
                    ("NTDBG_SYMBOL_CACHE", cache.as_path()),
                    ("NTDBG_SYMBOL_INDEX", off),
                    ("NTDBG_BREAKPAD_LAZY", off),
                    ("NTDBG_PDB_LAZY", Path::new("never")),
                ];
                let lazy = [
                    ("NTDBG_SYMBOL_CACHE", cache.as_path()),
                    ("NTDBG_SYMBOL_INDEX", off),
                    ("NTDBG_BREAKPAD_LAZY", always),
                ];
                // Every PDB loaded lazily (only large ones are by default), without the index.
                let lazy_pdb = [
                    ("NTDBG_SYMBOL_CACHE", cache.as_path()),
                    ("NTDBG_SYMBOL_INDEX", off),
                    ("NTDBG_PDB_LAZY", always),
                ];
                let cold: Vec<String> = INDEX_COMMANDS
                    .iter()
                    .map(|c| replay_with(&binary, dump, c, &with_cache))
                    .collect();
                let written = std::fs::read_dir(cache.join("index")).map_or(0, |d| d.count());
                if written == 0 {
                    continue;
                }
                indexed.fetch_add(1, Ordering::Relaxed);
                for (command, cold) in INDEX_COMMANDS.iter().zip(&cold) {
                    let warm = replay_with(&binary, dump, command, &with_cache);
                    let plain = replay_with(&binary, dump, command, &without);
                    let lazily = replay_with(&binary, dump, command, &lazy);
                    let lazy_pdb = replay_with(&binary, dump, command, &lazy_pdb);
                    compared.fetch_add(1, Ordering::Relaxed);
                    for (mode, text) in [
                        ("warm", &warm),
                        ("parsed whole", &plain),
                        ("lazy Breakpad", &lazily),
                        ("lazy PDB", &lazy_pdb),
                    ] {
                        if text != cold {
                            let diff = similar::TextDiff::from_lines(cold.as_str(), text.as_str())
                                .unified_diff()
                                .header("cold", mode)
                                .to_string();
                            failures.lock().unwrap().push(format!(
                                "`ntdbg {} {} {}` ({mode}):\n{diff}",
                                command[0],
                                dump.key,
                                command[1..].join(" ")
                            ));
                        }
                    }
                }
                let _ = std::fs::remove_dir_all(&cache);
            });
        }
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} outputs differ; first: {}",
        failures.len(),
        failures[0]
    );
    eprintln!(
        "{} dumps indexed, {} commands identical cold, warm, parsed whole and lazy",
        indexed.into_inner(),
        compared.into_inner()
    );
}
