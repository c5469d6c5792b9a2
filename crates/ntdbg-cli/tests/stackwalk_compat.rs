//! `ntdbg stackwalk` against `minidump-stackwalk` (rust-minidump 0.27) side by side on every
//! dump of the shared corpus, with the same symbols: every key minidump-stackwalk writes is in
//! ntdbg's JSON with the same type (recursively), the threads are the same, and every frame
//! minidump-stackwalk trusts is the same frame in the same order, up to its first scanned
//! frame; ntdbg may have more frames in between only where its leaf rule found a caller that
//! minidump-stackwalk's frame-pointer step skips (shown as `scan`). Also the text layout's
//! first lines, and the errors for unreadable input.
//!
//! Skips, saying so, when `minidump-stackwalk` is not on PATH (`cargo install --locked
//! minidump-stackwalk`) or the corpus is absent.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Keys minidump-stackwalk fills from its own instruction analysis, which ntdbg does not
/// run: null in ntdbg's report whatever minidump-stackwalk has.
const NOT_ANALYSED: &[&str] = &[
    "crash_info.adjusted_address",
    "crash_info.crash_inconsistencies",
    "crash_info.instruction",
    "crash_info.instruction_pointer_update",
    "crash_info.memory_accesses",
    "crash_info.possible_bit_flips",
];

/// Keys minidump-stackwalk's schema has as optional (its `print_json` marks them so: string
/// or null, number or null): a null in ntdbg's report means ntdbg found no value there (a
/// frame without a symbol, a module without a version), a value where minidump-stackwalk has
/// null means it found one (a PDB-resolved function). Paths are matched without indexes.
const NULLABLE: &[&str] = &[
    "threads.frames.file",
    "threads.frames.function",
    "threads.frames.function_offset",
    "threads.frames.inlines",
    "threads.frames.line",
    "threads.frames.module",
    "threads.frames.module_offset",
    "threads.frames.unloaded_modules",
    "threads.last_error_value",
    "threads.thread_name",
    "crashing_thread.frames.file",
    "crashing_thread.frames.function",
    "crashing_thread.frames.function_offset",
    "crashing_thread.frames.inlines",
    "crashing_thread.frames.line",
    "crashing_thread.frames.module",
    "crashing_thread.frames.module_offset",
    "crashing_thread.frames.unloaded_modules",
    "crashing_thread.last_error_value",
    "crashing_thread.thread_name",
    "modules.version",
    "modules.symbol_url",
    "pid",
    "process_uptime",
    "system_info.cpu_info",
];

/// ntdbg's walk stops after this many frames (`ntdbg_engine::stack::MAX_FRAMES`);
/// minidump-stackwalk goes on in runaway recursion.
const MAX_FRAMES: usize = 1024;

fn msw() -> Option<PathBuf> {
    let out = Command::new("sh")
        .args(["-c", "command -v minidump-stackwalk"])
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

fn ntdbg(args: &[&str], cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(args)
        .env_remove("_NT_SYMBOL_PATH")
        .env("NTDBG_SYMBOL_CACHE", cache)
        // Indexes written before the run ends: no detached writer outlives the scratch folder.
        .env("NTDBG_SYMBOL_INDEX_WRITER", "thread")
        .output()
        .expect("ntdbg runs")
}

/// One dump with the symbols each tool is given (minidump-stackwalk reads plain `.sym`
/// trees only; ntdbg gets the same files, or the `.sym.xz` originals).
struct Case {
    dump: PathBuf,
    msw_symbols: Option<PathBuf>,
    ntdbg_symbols: Option<PathBuf>,
}

/// Every dump under the corpus (`.dmp`, and `.dmp.xz` decompressed into `work`).
fn dumps(dir: &Path, work: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            dumps(&path, work, out);
        } else if name.ends_with(".dmp") {
            out.push(path);
        } else if let Some(stem) = name.strip_suffix(".dmp.xz") {
            let target = work.join(format!("{stem}.dmp"));
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(
                &mut liblzma::read::XzDecoder::new(std::fs::File::open(&path).unwrap()),
                &mut bytes,
            )
            .unwrap();
            std::fs::write(&target, bytes).unwrap();
            out.push(target);
        }
    }
}

fn cases(root: &Path, work: &Path) -> Vec<Case> {
    let firefox_xz = root.join("mozilla-minidump-stackwalk-pgo/pgo_data/symbols");
    let firefox_plain = work.join("firefox-symbols");
    std::fs::create_dir_all(&firefox_plain).unwrap();
    ntdbg_testutil::decompressed_sym_store(&firefox_xz, &firefox_plain);
    let breakpad = root.join("google-breakpad/src/processor/testdata/symbols");
    let rust_minidump = root.join("rust-minidump/testdata/symbols");
    let mini = work.join("mini-symbols");
    let mini_dir = mini.join("crash.pdb/3249D99D0C4049318610F4E4FB0B69361");
    std::fs::create_dir_all(&mini_dir).unwrap();
    std::fs::copy(
        root.join("getsentry-symbolic/symbolic-testutils/fixtures/windows/crash.sym"),
        mini_dir.join("crash.sym"),
    )
    .unwrap();

    let mut found = Vec::new();
    dumps(root, work, &mut found);
    found
        .into_iter()
        .map(|dump| {
            let text = dump.to_string_lossy().to_string();
            let (msw_symbols, ntdbg_symbols) = if text.contains("mozilla-minidump-stackwalk-pgo")
                || text.contains("tiny-exe-fastfail")
            {
                (Some(firefox_plain.clone()), Some(firefox_xz.clone()))
            } else if text.contains("minidump2.dmp") || text.contains("32bit_crash_addr") {
                (Some(breakpad.clone()), Some(breakpad.clone()))
            } else if text.contains("rust-minidump/testdata/test.dmp") {
                (Some(rust_minidump.clone()), Some(rust_minidump.clone()))
            } else if text.contains("windows/mini.dmp") {
                (Some(mini.clone()), Some(mini.clone()))
            } else {
                (None, None)
            };
            Case {
                dump,
                msw_symbols,
                ntdbg_symbols,
            }
        })
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every key of `msw` is in `ours` with the same JSON type, recursively (arrays element by
/// element as far as both go). Null against a value is allowed where minidump-stackwalk is
/// null (ntdbg knows more) and for the keys of [`NOT_ANALYSED`]. Returns the keys compared.
fn same_shape(msw: &Value, ours: &Value, path: &str, problems: &mut Vec<String>) -> usize {
    if msw.is_null()
        || (ours.is_null() && (NOT_ANALYSED.contains(&path) || NULLABLE.contains(&path)))
    {
        return 1;
    }
    if kind(msw) != kind(ours) {
        problems.push(format!(
            "{path}: {} in minidump-stackwalk, {} in ntdbg",
            kind(msw),
            kind(ours)
        ));
        return 1;
    }
    match (msw, ours) {
        (Value::Object(m), Value::Object(o)) => {
            let mut keys = 0;
            for (key, value) in m {
                let sub = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match o.get(key) {
                    Some(ours) => keys += same_shape(value, ours, &sub, problems),
                    None => {
                        problems.push(format!("{sub}: missing in ntdbg"));
                        keys += 1;
                    }
                }
            }
            keys
        }
        (Value::Array(m), Value::Array(o)) => m
            .iter()
            .zip(o)
            .map(|(a, b)| same_shape(a, b, path, problems))
            .sum(),
        _ => 1,
    }
}

/// What the frame comparison counted.
#[derive(Default)]
struct FrameCounts {
    /// Frames minidump-stackwalk trusts that ntdbg found the same.
    same: usize,
    /// Trusted frames of minidump-stackwalk at an address in no module (its CFI or frame
    /// pointers gave a stack or heap address): not a frame, ntdbg's walker refuses such a
    /// return address; the comparison of that thread stops there.
    outside_modules: usize,
}

/// The same threads; each frame minidump-stackwalk trusts (up to its first scanned frame)
/// the same module, module offset and function (when both name one), in the same order; an
/// extra frame of ntdbg's before it is allowed when ntdbg did not trust it as unwind data or
/// a frame pointer (the caller of a leaf, which a frame-pointer step skips).
fn same_trusted_frames(
    msw: &Value,
    ours: &Value,
    counts: &mut FrameCounts,
    problems: &mut Vec<String>,
) {
    let (m, o) = (
        msw["threads"].as_array().unwrap(),
        ours["threads"].as_array().unwrap(),
    );
    if m.len() != o.len() {
        problems.push(format!(
            "{} threads in minidump-stackwalk, {} in ntdbg",
            m.len(),
            o.len()
        ));
        return;
    }
    for (index, (mt, ot)) in m.iter().zip(o).enumerate() {
        if mt["thread_id"] != ot["thread_id"] {
            problems.push(format!(
                "thread {index}: id {} vs {}",
                mt["thread_id"], ot["thread_id"]
            ));
            continue;
        }
        let ours_frames = ot["frames"].as_array().unwrap();
        // How many more frames ntdbg has before the one compared.
        let mut extra = 0;
        for (i, mf) in mt["frames"].as_array().unwrap().iter().enumerate() {
            if matches!(
                mf["trust"].as_str(),
                Some("scan" | "cfi_scan" | "none" | "non")
            ) || i >= MAX_FRAMES
            {
                break;
            }
            if mf["frame"] != 0 && mf["module"].is_null() {
                counts.outside_modules += 1;
                break;
            }
            let same = |of: &Value| {
                let same_function = mf["function"].is_null()
                    || of["function"].is_null()
                    || mf["function"] == of["function"];
                mf["module"] == of["module"]
                    && mf["module_offset"] == of["module_offset"]
                    && same_function
            };
            // ntdbg's leaf-rule frame before the one minidump-stackwalk's frame pointer gave.
            if ours_frames
                .get(i + extra)
                .is_some_and(|of| !same(of) && of["trust"] == "scan")
                && ours_frames.get(i + extra + 1).is_some_and(same)
            {
                extra += 1;
            }
            let Some(of) = ours_frames.get(i + extra) else {
                problems.push(format!("thread {index} frame {i}: missing in ntdbg ({mf})"));
                break;
            };
            if !same(of) {
                problems.push(format!(
                    "thread {index} frame {i} ({}): minidump-stackwalk {} {} {}, ntdbg {} {} {}",
                    mf["trust"],
                    mf["module"],
                    mf["module_offset"],
                    mf["function"],
                    of["module"],
                    of["module_offset"],
                    of["function"]
                ));
                break;
            }
            counts.same += 1;
        }
    }
}

#[test]
fn stackwalk_json_matches_minidump_stackwalk_on_every_dump() {
    ntdbg_testutil::require_testdata!();
    let Some(msw) = msw() else {
        eprintln!("SKIP stackwalk_compat: minidump-stackwalk is not on PATH (cargo install --locked minidump-stackwalk)");
        return;
    };
    let root = ntdbg_testutil::testdata_dir().unwrap();
    let work = std::env::temp_dir().join(format!("ntdbg-stackwalk-compat-{}", std::process::id()));
    let cache = work.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let mut problems = Vec::new();
    let (mut compared_dumps, mut keys) = (0, 0);
    let mut frames = FrameCounts::default();
    let mut unreadable = Vec::new();
    for case in cases(&root, &work) {
        let dump = case.dump.to_str().unwrap();
        let mut msw_cmd = Command::new(&msw);
        msw_cmd.args(["--json", dump]);
        msw_cmd.args(case.msw_symbols.iter());
        let msw_out = msw_cmd.output().unwrap();
        let mut args = vec!["stackwalk", dump, "--json", "--offline"];
        let ntdbg_symbols = case
            .ntdbg_symbols
            .as_ref()
            .map(|p| p.to_str().unwrap().to_string());
        args.extend(ntdbg_symbols.as_deref());
        let ours = ntdbg(&args, &cache);
        if !msw_out.status.success() {
            // minidump-stackwalk cannot read it (corrupt, or a kernel dump): ntdbg must
            // either read it or fail the same way, with a message.
            if !ours.status.success() {
                assert_eq!(ours.status.code(), Some(1), "{dump}");
                assert!(!ours.stderr.is_empty(), "{dump}: no error message");
            }
            unreadable.push(dump.to_string());
            continue;
        }
        assert!(
            ours.status.success(),
            "{dump}: {}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let m: Value = serde_json::from_slice(&msw_out.stdout).unwrap();
        let o: Value = serde_json::from_slice(&ours.stdout).unwrap();
        let before = problems.len();
        keys += same_shape(&m, &o, "", &mut problems);
        same_trusted_frames(&m, &o, &mut frames, &mut problems);
        for key in ["thread_count", "pid", "main_module"] {
            if m[key] != o[key] {
                problems.push(format!("{key}: {} vs {}", m[key], o[key]));
            }
        }
        for key in ["type", "address", "crashing_thread"] {
            if m["crash_info"][key] != o["crash_info"][key] {
                problems.push(format!(
                    "crash_info.{key}: {} vs {}",
                    m["crash_info"][key], o["crash_info"][key]
                ));
            }
        }
        for (mm, om) in m["modules"]
            .as_array()
            .unwrap()
            .iter()
            .zip(o["modules"].as_array().unwrap())
        {
            for key in ["filename", "base_addr", "end_addr", "code_id", "version"] {
                if mm[key] != om[key] {
                    problems.push(format!(
                        "module {}: {key} {} vs {}",
                        mm["filename"], mm[key], om[key]
                    ));
                }
            }
        }
        for p in &mut problems[before..] {
            *p = format!("{dump}: {p}");
        }
        compared_dumps += 1;
    }
    let _ = std::fs::remove_dir_all(&work);
    eprintln!(
        "stackwalk_compat: {compared_dumps} dumps compared, {keys} keys, {} trusted frames the same \
         ({} trusted frames of minidump-stackwalk outside every module ended a comparison); \
         minidump-stackwalk could not read {}: {unreadable:?}",
        frames.same,
        frames.outside_modules,
        unreadable.len()
    );
    assert!(
        problems.is_empty(),
        "{} differences:\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert!(compared_dumps >= 30, "only {compared_dumps} dumps compared");
}

/// The crashed thread's block: its header line, then for each frame the frame line and
/// "Found by" (every register line of frame 0; callers' registers are what each walker
/// recovered and may differ in which are known).
fn crashed_block(text: &str) -> Vec<String> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("Thread "));
    let mut out = vec![lines.next().unwrap_or_default().to_string()];
    let mut frame = 0;
    for line in lines.take_while(|l| !l.is_empty()) {
        let is_frame_line =
            line.len() > 4 && line[..2].trim().parse::<usize>().is_ok() && &line[2..4] == "  ";
        if is_frame_line {
            frame = line[..2].trim().parse().unwrap();
        }
        if is_frame_line || line.starts_with("    Found by:") || frame == 0 {
            out.push(line.to_string());
        }
    }
    out
}

#[test]
fn stackwalk_text_layout_matches_minidump_stackwalk() {
    ntdbg_testutil::require_testdata!();
    let Some(msw) = msw() else {
        eprintln!("SKIP stackwalk_compat: minidump-stackwalk is not on PATH (cargo install --locked minidump-stackwalk)");
        return;
    };
    let dump = ntdbg_testutil::testdata("google-breakpad/src/processor/testdata/minidump2.dmp");
    let symbols = ntdbg_testutil::testdata("google-breakpad/src/processor/testdata/symbols");
    let (dump, symbols) = (dump.to_str().unwrap(), symbols.to_str().unwrap());
    let theirs = String::from_utf8(
        Command::new(msw)
            .args([dump, symbols])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let cache = std::env::temp_dir().join(format!("ntdbg-stackwalk-text-{}", std::process::id()));
    let ours = ntdbg(&["stackwalk", dump, symbols, "--offline"], &cache);
    let _ = std::fs::remove_dir_all(&cache);
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let ours = String::from_utf8(ours.stdout).unwrap();
    let header = |t: &str| {
        t.lines()
            .take_while(|l| !l.starts_with("Thread "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(header(&ours), header(&theirs));
    assert_eq!(crashed_block(&ours), crashed_block(&theirs));
    let modules = |t: &str| {
        t.lines()
            .skip_while(|l| *l != "Loaded modules:")
            .take_while(|l| !l.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(modules(&ours), modules(&theirs));
}

#[test]
fn unreadable_input_is_a_clear_error_with_exit_status_1() {
    let work = std::env::temp_dir().join(format!("ntdbg-stackwalk-errors-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let missing = work.join("missing.dmp");
    let out = ntdbg(&["stackwalk", missing.to_str().unwrap(), "--json"], &work);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("missing.dmp"),
        "{out:?}"
    );
    assert!(out.stdout.is_empty());

    // The first 100 bytes of a real dump: the header promises streams that are not there.
    let sample = std::fs::read(ntdbg_testutil::sample("crashy-x64-null.dmp")).unwrap();
    let truncated = work.join("truncated.dmp");
    std::fs::write(&truncated, &sample[..100]).unwrap();
    let out = ntdbg(&["stackwalk", truncated.to_str().unwrap(), "--json"], &work);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("truncated.dmp"),
        "{out:?}"
    );

    let out = ntdbg(
        &[
            "stackwalk",
            truncated.to_str().unwrap(),
            "--evil-json",
            "x.json",
        ],
        &work,
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--evil-json"),
        "{out:?}"
    );
    let _ = std::fs::remove_dir_all(&work);
}
