//! Bad input never panics, hangs or allocates without bound in `UserDump::open`.
//!
//! Real dumps are cut at every stream boundary (found by parsing the MDMP header and stream
//! directory by hand, in `ntdbg_testutil::corrupt`) and at a few hundred other offsets, have random
//! bytes flipped (fixed seeds), and have header, directory, count and location fields set to
//! hostile values. Each variant is written to a temp folder and opened: the result must be
//! `Ok` or a `TargetError` with a known code whose message names the file. Dumps that open are
//! then queried (threads, modules, event, memory) the way the engine would.

use ntdbg_targets::{MemoryView, Target, TargetError, UserDump};
use ntdbg_testutil::corrupt::{
    catch, field_smashes, parse_layout, put_u32, random_flips, take_largest_request, truncations,
    TempDir, TrackingAlloc, Variant, XorShift, HEADER_SIZE,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: TrackingAlloc = TrackingAlloc;

/// The error codes `TargetError::code` documents.
const KNOWN_CODES: &[&str] = &[
    "file_not_found",
    "io_error",
    "not_a_dump",
    "corrupt_dump",
    "unsupported_dump",
];

/// No single allocation made while opening a (small, damaged) dump may be larger than this.
const MAX_ALLOCATION: usize = 64 << 20;

/// The dumps we damage: real x64 and x86 dumps of several writers, two already-broken fuzz
/// cases, and the repository's own samples.
fn originals() -> Vec<(&'static str, PathBuf)> {
    vec![
        (
            "wine_null",
            ntdbg_testutil::testdata("winelab/x64/null.inproc.dmp"),
        ),
        (
            "symbolic_mini",
            ntdbg_testutil::testdata(
                "getsentry-symbolic/symbolic-testutils/fixtures/windows/mini.dmp",
            ),
        ),
        (
            "breakpad_minidump2",
            ntdbg_testutil::testdata("google-breakpad/src/processor/testdata/minidump2.dmp"),
        ),
        (
            "invalid_range",
            ntdbg_testutil::testdata("rust-minidump/testdata/invalid-range.dmp"),
        ),
        (
            "invalid_record_count",
            ntdbg_testutil::testdata("rust-minidump/testdata/invalid-record-count.dmp"),
        ),
        ("crashy_null", ntdbg_testutil::sample("crashy-x64-null.dmp")),
        (
            "crashy_x86_thread",
            ntdbg_testutil::sample("x86/crashy-x86-thread.dmp"),
        ),
        (
            "wine_x86_null",
            ntdbg_testutil::testdata("winelab/x86/null.inproc.dmp"),
        ),
    ]
}

/// What happened to one input.
#[derive(Debug, Default)]
struct Tally {
    opened: usize,
    rejected: usize,
    failures: Vec<String>,
    /// Distinct error messages (with the file name taken out) and how often each came.
    messages: BTreeMap<String, usize>,
    /// The largest single allocation seen while opening any input.
    largest_allocation: usize,
}

impl Tally {
    fn report(&self, what: &str) {
        eprintln!(
            "{what}: {} opened, {} rejected, {} failures",
            self.opened,
            self.rejected,
            self.failures.len()
        );
        eprintln!(
            "  largest single allocation: {} bytes",
            self.largest_allocation
        );
        if std::env::var_os("NTDBG_CORRUPT_VERBOSE").is_some() {
            for (message, n) in &self.messages {
                eprintln!("  {n:5} x {message}");
            }
        }
    }
    fn assert_clean(&self, what: &str) {
        self.report(what);
        assert!(
            self.failures.is_empty(),
            "{what}: {} inputs misbehaved:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

/// Checks an error: a known code, a message naming the file.
fn check_error(path: &Path, err: &TargetError) -> Result<(), String> {
    let code = err.code().name();
    if !KNOWN_CODES.contains(&code) {
        return Err(format!("unknown error code {code:?}: {err}"));
    }
    let message = err.to_string();
    if !message.contains(&path.display().to_string()) {
        return Err(format!("message does not name the file: {message}"));
    }
    Ok(())
}

/// Uses an opened dump the way the engine does, touching every fact and memory range.
fn exercise(dump: &UserDump) -> usize {
    let mut touched = 0usize;
    touched += dump.threads().len();
    for t in dump.threads() {
        touched += usize::from(t.context.is_some());
        if let Some(stack) = t.stack {
            touched += dump.read_virtual(stack.base, 16).len();
        }
        touched += dump.read_virtual(t.teb, 16).len();
    }
    for m in dump.modules().iter() {
        touched += m.name.len();
        touched += dump.read_virtual(m.raw.base_of_image, 8).len();
    }
    if let Some(event) = dump.event() {
        touched += event.parameters.len();
        touched += dump.read_virtual(event.address, 16).len();
    }
    let system = dump.system();
    touched += system.os_version.len();
    let _ = (dump.arch(), dump.kind(), dump.origin());
    for r in dump.regions() {
        touched += dump.read_chunk(r.base, 64).map_or(0, |c| c.len());
        touched += dump
            .read_chunk(r.end().saturating_sub(1), 64)
            .map_or(0, |c| c.len());
        touched += dump.read_virtual(r.base.wrapping_sub(8), 32).len();
        touched += dump.read_exact(r.base, 8).map_or(0, |b| b.len());
        touched += dump.read_uint(r.base, 8).map_or(0, |_| 1);
    }
    touched
}

/// Opens one file and records what happened.
fn open_and_check(path: &Path, tally: &mut Tally) {
    take_largest_request();
    let started = Instant::now();
    let outcome = catch(|| match UserDump::open(path) {
        Ok(dump) => {
            exercise(&dump);
            Ok(())
        }
        Err(e) => Err(e),
    });
    let elapsed = started.elapsed();
    let largest = take_largest_request();
    let swallowed = ntdbg_testutil::corrupt::panics_seen();
    if outcome.is_ok() && !swallowed.is_empty() {
        tally.failures.push(format!(
            "{}: panicked, and the code caught it itself: {}",
            path.display(),
            swallowed.join("; ")
        ));
    }
    let name = path.display();
    match outcome {
        Ok(Ok(())) => tally.opened += 1,
        Ok(Err(e)) => {
            tally.rejected += 1;
            let message = e.to_string().replace(&name.to_string(), "<file>");
            *tally.messages.entry(message).or_default() += 1;
            if let Err(why) = check_error(path, &e) {
                tally.failures.push(format!("{name}: bad error: {why}"));
            }
        }
        Err(panic) => tally.failures.push(format!("{name}: PANIC {panic}")),
    }
    tally.largest_allocation = tally.largest_allocation.max(largest);
    if largest > MAX_ALLOCATION {
        tally
            .failures
            .push(format!("{name}: allocated {largest} bytes in one request"));
    }
    // A hang guard, not a speed check: far beyond an open's time on a loaded machine.
    if elapsed > Duration::from_secs(60) {
        tally.failures.push(format!("{name}: took {elapsed:?}"));
    }
}

/// Writes each variant of each original to a temp folder and opens it.
fn run_variants(tag: &str, make: impl Fn(&[u8], u64) -> Vec<Variant>) -> Tally {
    let dir = TempDir::new(tag);
    let mut tally = Tally::default();
    for (seed, (name, original)) in originals().into_iter().enumerate() {
        let data = std::fs::read(&original).expect("read original dump");
        for v in make(&data, seed as u64 + 1) {
            let path = dir.write(&format!("{name}-{}.dmp", v.label), &v.apply(&data));
            open_and_check(&path, &mut tally);
            let _ = std::fs::remove_file(&path);
        }
    }
    tally
}

#[test]
fn originals_open() {
    ntdbg_testutil::require_testdata!();
    for (name, path) in originals() {
        let mut tally = Tally::default();
        open_and_check(&path, &mut tally);
        tally.assert_clean(name);
    }
}

#[test]
fn layout_parser_sees_the_streams() {
    // The hand-rolled parser must find real directories, or the truncation test would only
    // cut at the spread offsets.
    let data = std::fs::read(ntdbg_testutil::sample("crashy-x64-null.dmp")).unwrap();
    let layout = parse_layout(&data).expect("MDMP");
    assert!(layout
        .streams
        .iter()
        .any(|s| s.kind == ntdbg_testutil::corrupt::THREAD_LIST));
    assert!(layout
        .streams
        .iter()
        .any(|s| s.kind == ntdbg_testutil::corrupt::MODULE_LIST));
    assert!(ntdbg_testutil::corrupt::boundaries(&data).len() > 40);
}

#[test]
fn truncated_dumps_never_panic() {
    ntdbg_testutil::require_testdata!();
    let tally = run_variants("trunc", |data, _| truncations(data, 300));
    assert!(
        tally.opened + tally.rejected > 1500,
        "too few variants: {tally:?}"
    );
    tally.assert_clean("truncated");
}

#[test]
fn flipped_dumps_never_panic() {
    ntdbg_testutil::require_testdata!();
    let tally = run_variants("flip", |data, seed| {
        let n = 150 * ntdbg_testutil::corrupt::scale();
        let mut all = random_flips(data, seed * 1000 + 1, n);
        all.extend(random_flips(data, seed * 1000 + 2, n));
        all
    });
    tally.assert_clean("flipped");
}

#[test]
fn smashed_fields_never_panic() {
    ntdbg_testutil::require_testdata!();
    let tally = run_variants("smash", field_smashes);
    tally.assert_clean("smashed fields");
}

#[test]
fn degenerate_files_are_clear_errors() {
    let dir = TempDir::new("degenerate");
    let mut rng = XorShift::new(77);
    let mut pagedu64 = b"PAGEDU64".to_vec();
    pagedu64.extend(rng.bytes(8192));
    let mut pagedump = b"PAGEDUMP".to_vec();
    pagedump.extend(rng.bytes(4096));
    let mut header_only = b"MDMP\x93\xa7\0\0".to_vec();
    header_only.resize(HEADER_SIZE, 0);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "not_a_dump"),
        ("three_bytes", b"MDM".to_vec(), "not_a_dump"),
        ("signature_only", b"MDMP".to_vec(), "corrupt_dump"),
        ("header_only_no_streams", header_only, "corrupt_dump"),
        ("pagedu64", pagedu64, "unsupported_dump"),
        ("pagedump", pagedump, "unsupported_dump"),
        ("garbage", rng.bytes(65536), "not_a_dump"),
        ("text", b"this is not a dump\n".to_vec(), "not_a_dump"),
        ("elf", b"\x7fELF\x02\x01\x01\0".to_vec(), "not_a_dump"),
    ];
    let mut failures = Vec::new();
    for (name, bytes, want) in cases {
        let path = dir.write(&format!("{name}.dmp"), &bytes);
        match catch(|| UserDump::open(&path)) {
            Err(panic) => failures.push(format!("{name}: PANIC {panic}")),
            Ok(Ok(_)) => failures.push(format!("{name}: opened")),
            Ok(Err(e)) => {
                if let Err(why) = check_error(&path, &e) {
                    failures.push(format!("{name}: {why}"));
                }
                if e.code() != want {
                    failures.push(format!("{name}: code {} (want {want}): {e}", e.code()));
                }
                if want == "unsupported_dump" && !e.to_string().contains("not supported yet") {
                    failures.push(format!("{name}: kernel dump message: {e}"));
                }
            }
        }
    }

    // A directory, a missing file, a file inside a missing folder.
    let missing = dir.path().join("no-such.dmp");
    let missing_deep = dir.path().join("no-such-folder").join("x.dmp");
    for (name, path, want) in [
        (
            "directory",
            dir.path().to_path_buf(),
            &["io_error", "not_a_dump"][..],
        ),
        ("missing", missing, &["file_not_found"][..]),
        ("missing_deep", missing_deep, &["file_not_found"][..]),
    ] {
        match catch(|| UserDump::open(&path)) {
            Err(panic) => failures.push(format!("{name}: PANIC {panic}")),
            Ok(Ok(_)) => failures.push(format!("{name}: opened")),
            Ok(Err(e)) => {
                if let Err(why) = check_error(&path, &e) {
                    failures.push(format!("{name}: {why}"));
                }
                if !want.contains(&e.code().name()) {
                    failures.push(format!("{name}: code {} (want {want:?}): {e}", e.code()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn huge_counts_do_not_allocate_gigabytes() {
    let dir = TempDir::new("huge");
    let original = std::fs::read(ntdbg_testutil::sample("crashy-x64-null.dmp")).unwrap();
    let layout = parse_layout(&original).expect("MDMP");
    let mut variants = Vec::new();
    for count in [u32::MAX, 0x1000_0000, 0x0100_0000, 0x8000_0000] {
        // The header claims a huge stream directory...
        let mut bytes = original.clone();
        put_u32(&mut bytes, 8, count);
        variants.push((format!("nstreams_{count:x}"), bytes));
        // ... or a stream claims a huge record count, a huge size, or both.
        for s in layout.streams.iter().filter(|s| s.size >= 4) {
            let mut bytes = original.clone();
            put_u32(&mut bytes, s.rva as usize, count);
            variants.push((format!("stream{}_count_{count:x}", s.kind), bytes.clone()));
            put_u32(&mut bytes, s.entry_offset + 4, count);
            variants.push((format!("stream{}_count_size_{count:x}", s.kind), bytes));
            let mut bytes = original.clone();
            put_u32(&mut bytes, s.entry_offset + 4, count);
            variants.push((format!("stream{}_size_{count:x}", s.kind), bytes));
        }
    }
    // A header whose directory is the only thing there, claiming 4 billion entries.
    let mut tiny = b"MDMP\x93\xa7\0\0\xff\xff\xff\xff\x20\0\0\0".to_vec();
    tiny.resize(HEADER_SIZE + 24, 0xff);
    variants.push(("tiny_huge_directory".into(), tiny));

    let mut tally = Tally::default();
    for (name, bytes) in variants {
        let path = dir.write(&format!("{name}.dmp"), &bytes);
        open_and_check(&path, &mut tally);
    }
    tally.assert_clean("huge counts");
    // And the process as a whole stayed small.
    if let Some(peak) = peak_rss_kib() {
        assert!(peak < 1 << 20, "peak RSS {peak} KiB");
    }
}

/// The process's peak resident set (Linux), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn allocation_tracker_sees_large_requests() {
    take_largest_request();
    let big = vec![0u8; 3 << 20];
    assert!(take_largest_request() >= big.len());
}

/// A dump's threads as comparable text: id and TEB, context, stack base (a cut dump may have
/// lost a thread's context or stack: those are compared where the cut dump has them).
fn thread_facts(dump: &UserDump) -> Vec<(String, Option<String>, Option<u64>)> {
    dump.threads()
        .iter()
        .map(|t| {
            (
                format!("{:#x} teb {:#x}", t.id, t.teb),
                t.context.as_ref().map(|c| format!("{:?}", c.raw)),
                t.stack.map(|s| s.base),
            )
        })
        .collect()
}

fn module_facts(dump: &UserDump) -> Vec<(String, u64, u32)> {
    dump.modules()
        .iter()
        .map(|m| (m.name.clone(), m.raw.base_of_image, m.raw.size_of_image))
        .collect()
}

/// A dump cut short keeps what lies whole before the cut and never a byte from past it: at
/// offsets all over a sample (every stream boundary, inside each list, across the stacks),
/// what the cut dump gives — threads with their contexts, modules, every captured byte, the
/// exception — equals the whole dump's, and what was lost is said.
#[test]
fn cut_dumps_keep_their_whole_part_and_nothing_else() {
    for sample in ["crashy-x64-stack.dmp", "crashy-x64-thread.dmp"] {
        let path = ntdbg_testutil::sample(sample);
        let bytes = std::fs::read(&path).unwrap();
        let whole = UserDump::open(&path).unwrap();
        assert!(whole.file_losses().is_empty(), "{:?}", whole.file_losses());
        let (threads, modules) = (thread_facts(&whole), module_facts(&whole));
        let dir = TempDir::new("cut-whole-part");
        let mut offsets: Vec<usize> = (0..bytes.len()).step_by(4093).collect();
        offsets.extend(ntdbg_testutil::corrupt::boundaries(&bytes));
        let (mut opened, mut cut_ranges) = (0, 0);
        for cut in offsets.into_iter().filter(|&c| c < bytes.len()) {
            let file = dir.write("cut.dmp", &bytes[..cut]);
            let Ok(dump) = UserDump::open(&file) else {
                continue; // before the system info ends: nothing to read
            };
            opened += 1;
            let at = format!("{sample} cut at {cut:#x}");
            assert!(!dump.file_losses().is_empty(), "{at}: no loss said");
            assert!(dump.threads().len() <= threads.len(), "{at}");
            for (got, want) in thread_facts(&dump).iter().zip(&threads) {
                assert_eq!(got.0, want.0, "{at}");
                if got.1.is_some() {
                    assert_eq!(got.1, want.1, "{at}");
                }
                if got.2.is_some() {
                    assert_eq!(got.2, want.2, "{at}");
                }
            }
            let got = module_facts(&dump);
            assert_eq!(got[..], modules[..got.len()], "{at}");
            if let Some(e) = dump.event() {
                let w = whole.event().unwrap();
                assert_eq!(
                    (e.code, e.address, e.thread_id),
                    (w.code, w.address, w.thread_id)
                );
                assert_eq!(e.parameters, w.parameters, "{at}");
            }
            for region in dump.regions() {
                let size = usize::try_from(region.size).unwrap();
                assert_eq!(
                    dump.read_exact(region.base, size),
                    whole.read_exact(region.base, size),
                    "{at}: {region:?}"
                );
                // Past a range the cut shortened: holes, never zeros.
                let whole_region = whole.regions().into_iter().find(|r| r.base == region.base);
                if whole_region.is_some_and(|w| w.size > region.size) {
                    cut_ranges += 1;
                    assert_eq!(dump.read_virtual(region.end(), 8), vec![None; 8], "{at}");
                }
            }
        }
        assert!(opened > 20, "{sample}: {opened} cuts opened");
        assert!(cut_ranges > 0, "{sample}: {cut_ranges} cut ranges");
    }
}

/// The losses are said stream by stream: a thread list cut after its first entry, and a
/// stack cut in its middle (the exception record after it lost too).
#[test]
fn a_cut_dump_says_what_it_lost() {
    let dir = TempDir::new("cut-losses");
    let bytes = std::fs::read(ntdbg_testutil::sample("crashy-x64-thread.dmp")).unwrap();
    let layout = parse_layout(&bytes).unwrap();
    let threads = layout.streams.iter().find(|s| s.kind == 3).unwrap().rva as usize;

    // Inside the thread list, after its first entry: one thread of two.
    let file = dir.write("threads.dmp", &bytes[..threads + 4 + 48 + 10]);
    let dump = UserDump::open(&file).unwrap();
    assert_eq!(dump.threads().len(), 1);
    let losses = dump.file_losses().join("\n");
    assert!(losses.contains("threads: 1 of 2 read"), "{losses}");
    assert!(
        losses.starts_with("the dump is cut short: the file ends at"),
        "{losses}"
    );
    assert!(dump.event().is_none() && dump.modules().iter().count() == 0);

    // In the middle of the 1 MiB stack: the thread and every module, the stack's first part.
    let bytes = std::fs::read(ntdbg_testutil::sample("crashy-x64-stack.dmp")).unwrap();
    let file = dir.write("stack.dmp", &bytes[..0x80000]);
    let dump = UserDump::open(&file).unwrap();
    assert_eq!(dump.threads().len(), 1);
    assert_eq!(dump.modules().iter().count(), 8);
    assert!(dump.event().is_none());
    assert!(dump.memory_cut_short());
    let losses = dump.file_losses().join("\n");
    for said in [
        "memory (MemoryList): 1 of 2 ranges lie past the end of the file, 1 more in part",
        "threads: the stack memory of 1 is cut by the end of the file",
        "the exception record lies past the end of the file: not read",
        "the misc info stream (process id and times) lies past the end of the file",
    ] {
        assert!(losses.contains(said), "{said}\n{losses}");
    }
}
