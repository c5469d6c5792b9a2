//! Our facts against what upstream projects expect and what minidump-stackwalk 0.27.0 reports,
//! for the real dumps of the shared test corpus (`testdata/README.md` there says which dump,
//! which symbols and where each expectation comes from).
//!
//! Expectations, strongest first (for each fact the strongest source that has it is used):
//! 1. upstream: the per-source `EXPECTED.json`, breakpad's `minidump2.stackwalk.out`,
//!    rust-minidump's insta snapshots, `winelab/facts/<arch>/<dump>.json`;
//! 2. our own minidump-stackwalk 0.27.0 runs: `_generated-minidump-stackwalk-0.27.0/<name>.json`
//!    (crash info, counts, frames) and `<name>.dump-brief.txt` (the raw exception record).
//!
//! Frames: the top 5 *physical* frames of the crashing thread, walked from the exception context
//! (`Session::event_stack`, the same walk `Report.stack` carries). Inline frames are left out
//! of the alignment because minidump-stackwalk folds them into its `inlines` list (and with a
//! Breakpad `.sym` has none); where upstream names an inlinee it is checked separately.
//! A frame matches when the module file name, the function name before its parameter list
//! (`main(int, char**)` = `main`), the source line (when the reference has one) and the
//! address agree. Our frame 0 is the context IP and callers carry the return address, as WinDbg
//! prints them; minidump-stackwalk's `offset` for callers is the return address − 1 on x86 and
//! amd64 and − 4 on arm64 (minidump-unwind: `frame.instruction = ip - 1` / `ip - 4`), so
//! a caller's address may equal theirs or exceed it by exactly that much. breakpad's `.stackwalk.out` and lldb print
//! return addresses: there the addresses must be equal.
//! minidump-stackwalk frames found by stack scanning (`trust: scan`) are heuristics: they are
//! counted separately and never fail the test.
//!
//! Where we differ and are right, or differ because of a bug we know of, a [`Known`] entry says so
//! (its reason is printed in the table). A known entry that stops matching fails
//! `known_differences_still_apply`, so that fixed bugs get their entry removed.
//!
//! Every case runs once (in parallel) and feeds one `#[test]` per dump;
//! `comparison_table` prints the table (`cargo test -p ntdbg-analysis --test analysis upstream:: --
//! --nocapture`) and writes it to `target/upstream-comparison.md`.

use ntdbg_analysis::{analyze, Report};
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;
use ntdbg_testutil::testdata;
use serde_json::Value;
use std::fmt::{Debug, Write as _};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How many frames of the crashing thread are compared.
const TOP: usize = 5;
/// Where our minidump-stackwalk runs live.
const GENERATED: &str = "_generated-minidump-stackwalk-0.27.0";

// ---------------------------------------------------------------------------------------------
// The cases

/// Which minidump-stackwalk output describes the dump.
#[derive(Clone, Copy)]
enum Stackwalk {
    /// Our run: `_generated-minidump-stackwalk-0.27.0/<name>.json` (+ `.dump-brief.txt`).
    Generated(&'static str),
    /// An upstream insta snapshot of `minidump-stackwalk --json` and of `--dump --brief`.
    Snapshot {
        json: &'static str,
        dump_brief: &'static str,
    },
    /// A winelab facts file (its frames are minidump-stackwalk 0.27.0 with `crashy.sym`).
    Winelab(&'static str),
}

/// Why a check may differ from its expectation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum KnownKind {
    /// We differ and we are right.
    OursRight,
    /// A bug of ours, reported and not hidden: the check is listed as a known bug. (None is
    /// open at the moment: every difference found so far is explained by `OursRight`.)
    #[allow(dead_code)]
    Bug,
}

/// A documented difference for one check of one case.
#[derive(Clone, Copy, Debug)]
struct Known {
    /// The check's key: `frame N` / `upstream frame N` (physical frame index), `scan frame N`
    /// (a minidump-stackwalk scan frame: never a failure, the entry only says why), `frame
    /// count`, `inline frame`, or a fact name (`exception.code`, `threads`, ...).
    key: &'static str,
    kind: KnownKind,
    why: &'static str,
}

struct Case {
    /// The name tests and the table use.
    name: &'static str,
    /// The dump, relative to the test corpus (`.xz`: decompressed to a temporary folder).
    dump: &'static str,
    /// Symbol folders, relative to the test corpus (empty: no symbols at all). Files named here
    /// are linked into a folder of their own under the target's temporary folder, which joins
    /// the symbol path: the way to offer some files of a folder and not the others.
    symbols: &'static [&'static str],
    stackwalk: Stackwalk,
    /// Upstream expectations beyond the minidump-stackwalk output.
    upstream: fn(&mut Expect),
    known: &'static [Known],
    /// What the table should say about the case's sources (empty: nothing).
    note: &'static str,
}

const BREAKPAD_SYMBOLS: &str = "google-breakpad/src/processor/testdata/symbols";
const FIREFOX_SYMBOLS: &str = "mozilla-minidump-stackwalk-pgo/pgo_data/symbols";
const WINE_X64: &str = "winelab/x64";
const WINE_X86: &str = "winelab/x86";

fn no_upstream(_: &mut Expect) {}

const SIGSEGV_SCAN: &str = "minidump-stackwalk (no symbols) took stack words 0x300f/0x305f, \
     outside every function of sigsegv.pdb, for return addresses; with the PDB our scan keeps \
     only addresses inside functions (crash <- foo <- main <- mainCRTStartup <- kernel32)";

/// Frames minidump-stackwalk took from unwind data or a frame pointer although their return
/// address lies in no module's code (stack and JIT addresses): we refuse those and find the
/// caller by validated scanning, which shifts the frames after them.
const OUTSIDE_CODE: &str = "minidump-stackwalk's caller here (from unwind data or a frame \
     pointer) is in no module's code (a stack or JIT address): we refuse it and scan on";
/// ARM64 threads whose last frame record is zero (fp and lr 0): the chain ends there, where
/// minidump-stackwalk scans on and adds a stack leftover.
const RECORD_CHAIN_END: &str = "the last frame record is zero (fp and lr 0): the thread's \
     outermost frame; minidump-stackwalk scans past it and adds a leftover";

/// Threads waiting in a system-call stub (`mov eax,N; mov edx,…; call edx; ret N`): the stub's
/// bytes are in the dump and show a leaf, so its return address at `[esp]` is its caller (the
/// thread-pool worker, the wait function); minidump-stackwalk's frame pointer skips that
/// caller, and ours follows the same chain one frame later.
const LEAF_STUB: &str = "frame 0 is a system-call stub whose bytes (in the dump) show a leaf: \
     its caller at [esp] is a frame minidump-stackwalk's frame-pointer step skips";

const MINI_KNOWN: &[Known] = &[
    Known {
        key: "thread 1 frame 1",
        kind: KnownKind::OursRight,
        why: LEAF_STUB,
    },
    Known {
        key: "thread 1 frame 2",
        kind: KnownKind::OursRight,
        why: LEAF_STUB,
    },
    Known {
        key: "thread 1 frame 3",
        kind: KnownKind::OursRight,
        why: LEAF_STUB,
    },
    Known {
        key: "thread 1 frame count",
        kind: KnownKind::OursRight,
        why: LEAF_STUB,
    },
    Known {
        key: "thread 2 frame 1",
        kind: KnownKind::OursRight,
        why: LEAF_STUB,
    },
    Known {
        key: "thread 2 frame 2",
        kind: KnownKind::OursRight,
        why: LEAF_STUB,
    },
    Known {
        key: "thread 2 frame 3",
        kind: KnownKind::OursRight,
        why: LEAF_STUB,
    },
    Known {
        key: "thread 2 frame count",
        kind: KnownKind::OursRight,
        why: LEAF_STUB,
    },
    Known {
        key: "thread 3 frame count",
        kind: KnownKind::OursRight,
        why: LEAF_STUB,
    },
];

const FIREFOX_X64_KNOWN: &[Known] = &[
    Known {
        key: "thread 2 frame 1",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 2 frame 3",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 3 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 37 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 55 frame 3",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 56 frame 3",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
];

const FIREFOX_ARM64_KNOWN: &[Known] = &[
    Known {
        key: "thread 1 frame count",
        kind: KnownKind::OursRight,
        why: RECORD_CHAIN_END,
    },
    Known {
        key: "thread 10 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 100 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 102 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 16 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 19 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 2 frame count",
        kind: KnownKind::OursRight,
        why: RECORD_CHAIN_END,
    },
    Known {
        key: "thread 20 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 21 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 22 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 23 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 24 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 25 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 26 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 28 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 3 frame count",
        kind: KnownKind::OursRight,
        why: RECORD_CHAIN_END,
    },
    Known {
        key: "thread 36 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 40 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 53 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 56 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 60 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 68 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 7 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 8 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 81 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 82 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
    Known {
        key: "thread 94 frame 4",
        kind: KnownKind::OursRight,
        why: OUTSIDE_CODE,
    },
];

fn cases() -> Vec<Case> {
    let mut cases = vec![
        Case {
            name: "symbolic windows/mini.dmp",
            dump: "getsentry-symbolic/symbolic-testutils/fixtures/windows/mini.dmp",
            symbols: &["getsentry-symbolic/symbolic-testutils/fixtures/windows"],
            stackwalk: Stackwalk::Generated("symbolic-windows-mini"),
            upstream: upstream_symbolic_mini,
            known: MINI_KNOWN,
            note: "symbol path = the fixtures folder (crash.sym and crash.pdb): the PDB wins, as in WinDbg; physical frames compared (inline frames: see the crash.pdb-only row)",
        },
        Case {
            // The same dump with crash.pdb alone: the symbol store prefers a Breakpad .sym when
            // both are present (ntdbg-symbols load order), and only the PDB has inline records.
            name: "symbolic windows/mini.dmp (crash.pdb only)",
            dump: "getsentry-symbolic/symbolic-testutils/fixtures/windows/mini.dmp",
            symbols: &[
                "getsentry-symbolic/symbolic-testutils/fixtures/windows/crash.pdb",
                "getsentry-symbolic/symbolic-testutils/fixtures/windows/crash.exe",
            ],
            stackwalk: Stackwalk::Generated("symbolic-windows-mini"),
            upstream: upstream_symbolic_mini_pdb,
            known: MINI_KNOWN,
            note: "crash.pdb + crash.exe only: frame 0 holds the inline calls `anonymous namespace'::crash <- `anonymous namespace'::start (symbolic's inlinee at 0x2a3d) in main; physical frames still equal minidump-stackwalk's (crash.sym)",
        },
        Case {
            name: "lldb sigsegv.dmp",
            dump: "llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs/sigsegv.dmp",
            symbols: &["llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs"],
            stackwalk: Stackwalk::Generated("lldb-sigsegv"),
            upstream: upstream_lldb_sigsegv,
            // Neither side has sigsegv.exe's image (so no .pdata): callers come from stack
            // scanning. minidump-stackwalk, without symbols, accepted every stack word inside
            // the module: 0x300f and 0x305f are outside every function of sigsegv.pdb
            // (`ln` finds none). With the PDB the scanner accepts only addresses inside
            // functions and finds crash <- foo+0x71 (line 32) <- main+0x1d (line 38) <-
            // mainCRTStartup+0x9 (line 11) <- kernel32; minidump-stackwalk's own 0x1170
            // (= foo+0x71 - 1) is our frame 1, found by it only as frame 3.
            known: &[
                Known { key: "scan frame 1", kind: KnownKind::OursRight, why: SIGSEGV_SCAN },
                Known { key: "scan frame 2", kind: KnownKind::OursRight, why: SIGSEGV_SCAN },
                Known { key: "scan frame 3", kind: KnownKind::OursRight, why: SIGSEGV_SCAN },
                Known { key: "scan frame 4", kind: KnownKind::OursRight, why: SIGSEGV_SCAN },
            ],
            note: "symbols: sigsegv.pdb (minidump-stackwalk had none); no image, so callers come from stack scanning on both sides",
        },
        Case {
            name: "lldb fizzbuzz_no_heap.dmp",
            dump: "llvm-lldb/packages/Python/lldbsuite/test/functionalities/postmortem/minidump/fizzbuzz_no_heap.dmp",
            symbols: &[],
            stackwalk: Stackwalk::Generated("lldb-fizzbuzz_no_heap"),
            upstream: upstream_lldb_fizzbuzz,
            known: &[],
            note: "no symbols (as minidump-stackwalk); lldb bt return addresses equal ours",
        },
        Case {
            name: "breakpad minidump2.dmp",
            dump: "google-breakpad/src/processor/testdata/minidump2.dmp",
            symbols: &[BREAKPAD_SYMBOLS],
            stackwalk: Stackwalk::Generated("breakpad-minidump2"),
            upstream: upstream_breakpad_minidump2,
            known: &[],
            note: "threads = 2 as in the dump; breakpad's processed_thread_count 1 (it drops the dump-writer thread) is not a dump fact",
        },
        Case {
            name: "breakpad minidump_32bit_crash_addr.dmp",
            dump: "google-breakpad/src/processor/testdata/minidump_32bit_crash_addr.dmp",
            symbols: &[BREAKPAD_SYMBOLS],
            stackwalk: Stackwalk::Generated("breakpad-minidump_32bit_crash_addr"),
            upstream: upstream_breakpad_32bit,
            known: &[],
            note: "exception parameter 1 is 0xffffffff00000045 in the record; we report 0x45 as breakpad requires",
        },
    ];
    for (name, stem) in [
        ("breakpad ascii_read_av.dmp", "ascii_read_av"),
        ("breakpad ascii_write_av.dmp", "ascii_write_av"),
        ("breakpad null_read_av.dmp", "null_read_av"),
        ("breakpad null_write_av.dmp", "null_write_av"),
        ("breakpad read_av_non_null.dmp", "read_av_non_null"),
        ("breakpad stack_exhaustion.dmp", "stack_exhaustion"),
    ] {
        cases.push(Case {
            name,
            dump: leak(format!("google-breakpad/src/processor/testdata/{stem}.dmp")),
            symbols: &[],
            stackwalk: Stackwalk::Generated(leak(format!("breakpad-{stem}"))),
            // Upstream only rates exploitability for these (not a fact ntdbg reports).
            upstream: no_upstream,
            known: &[],
            note: "no symbols (crashme.pdb is not public); upstream only rates exploitability, not an ntdbg fact",
        });
    }
    cases.extend([
        Case {
            name: "breakpad tiny-exe-fastfail.dmp",
            dump: "google-breakpad/src/processor/testdata/tiny-exe-fastfail.dmp",
            symbols: &[],
            stackwalk: Stackwalk::Generated("breakpad-tiny-exe-fastfail"),
            upstream: upstream_breakpad_fastfail,
            known: &[],
            note: "no symbols, no image (as minidump-stackwalk): callers by stack scanning on both sides",
        },
        Case {
            name: "breakpad tiny-exe-with-cet-xsave.dmp",
            dump: "google-breakpad/src/processor/testdata/tiny-exe-with-cet-xsave.dmp",
            symbols: &[],
            stackwalk: Stackwalk::Generated("breakpad-tiny-exe-with-cet-xsave"),
            upstream: upstream_breakpad_cet,
            known: &[],
            note: "no exception stream: thread 0's own stack compared with minidump-stackwalk's threads[0]",
        },
        Case {
            name: "rust-minidump test.dmp",
            dump: "rust-minidump/testdata/test.dmp",
            symbols: &["rust-minidump/testdata/symbols"],
            stackwalk: Stackwalk::Snapshot {
                json: "rust-minidump/minidump-stackwalk/tests/snapshots/test_minidump_stackwalk__json-pretty-symbols.snap",
                dump_brief: "rust-minidump/minidump-stackwalk/tests/snapshots/test_minidump_stackwalk__dump-brief.snap",
            },
            upstream: no_upstream,
            known: &[],
            note: "frames and facts: upstream snapshots json-pretty-symbols + dump-brief (rust-minidump)",
        },
        Case {
            name: "rust-minidump invalid-parameter.dmp",
            dump: "rust-minidump/testdata/invalid-parameter.dmp",
            symbols: &[],
            stackwalk: Stackwalk::Generated("rust-minidump-invalid-parameter"),
            upstream: upstream_invalid_parameter,
            known: &[],
            note: "no symbols (as minidump-stackwalk); exception address 0, no faulting module",
        },
        Case {
            name: "firefox windows-x86_64.dmp",
            dump: "mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-x86_64.dmp",
            symbols: &[FIREFOX_SYMBOLS],
            stackwalk: Stackwalk::Generated("firefox-windows-x86_64"),
            upstream: no_upstream,
            known: FIREFOX_X64_KNOWN,
            note: "xul.sym is not in the corpus: xul.dll frames are unsymbolized on both sides",
        },
        Case {
            name: "firefox windows-aarch64.dmp",
            dump: "mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-aarch64.dmp",
            symbols: &[FIREFOX_SYMBOLS],
            stackwalk: Stackwalk::Generated("firefox-windows-aarch64"),
            upstream: no_upstream,
            known: FIREFOX_ARM64_KNOWN,
            note: "xul.sym is not in the corpus; arm64 callers: minidump-stackwalk offset = return address - 4",
        },
    ]);
    for (arch, stem) in WINELAB {
        let symbols: &'static [&'static str] = if *arch == "x64" {
            &[WINE_X64]
        } else {
            &[WINE_X86]
        };
        let dump = if *stem == "null.inproc-full" {
            format!("winelab/{arch}/{stem}.dmp.xz")
        } else {
            format!("winelab/{arch}/{stem}.dmp")
        };
        cases.push(Case {
            name: leak(format!("winelab {arch}/{stem}")),
            dump: leak(dump),
            symbols,
            stackwalk: Stackwalk::Winelab(leak(format!("winelab/facts/{arch}/{stem}.json"))),
            upstream: no_upstream,
            known: &[],
            note: if *stem == "null.inproc-full" {
                "full-memory dump, decompressed from .xz into the target's temporary folder"
            } else {
                ""
            },
        });
    }
    cases
}

/// Every winelab dump, by architecture and stem.
const WINELAB: &[(&str, &str)] = &[
    ("x64", "abort.aedebug"),
    ("x64", "abort.dbgrun"),
    ("x64", "abort.inproc"),
    ("x64", "breakpoint.aedebug"),
    ("x64", "breakpoint.dbgrun"),
    ("x64", "breakpoint.inproc"),
    ("x64", "divzero.aedebug"),
    ("x64", "divzero.dbgrun"),
    ("x64", "divzero.inproc"),
    ("x64", "fastfail.dbgrun"),
    ("x64", "null.aedebug"),
    ("x64", "null.dbgrun"),
    ("x64", "null.inproc"),
    ("x64", "null.inproc-full"),
    ("x64", "raise.aedebug"),
    ("x64", "raise.dbgrun"),
    ("x64", "raise.inproc"),
    ("x64", "stack.dbgrun"),
    ("x64", "stack.inproc"),
    ("x86", "divzero.inproc"),
    ("x86", "null.inproc"),
    ("x86", "raise.inproc"),
    ("x86", "stack.inproc"),
];

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

// ---------------------------------------------------------------------------------------------
// Upstream expectations, read from the corpus's EXPECTED.json files

fn expected(source: &str, key: &str) -> Value {
    let all = json(&format!("{source}/EXPECTED.json"));
    let v = all.get(key).cloned();
    v.unwrap_or_else(|| panic!("{source}/EXPECTED.json has no entry {key:?}"))
}

fn upstream_symbolic_mini(e: &mut Expect) {
    let src = "getsentry-symbolic/EXPECTED.json (symbolic test_processor.rs)";
    let x = expected(
        "getsentry-symbolic",
        "symbolic-testutils/fixtures/windows/mini.dmp",
    );
    e.put_access_address(jhex(&x["crash_address"]), src);
    e.put_crash_reason(x["crash_reason"].as_str().expect("crash_reason"), src);
    e.put_address(jhex(&x["exception_address"]), src);
    e.put_thread_id(
        x["crashing_thread_id"]
            .as_u64()
            .expect("crashing_thread_id") as u32,
        src,
    );
    let fm = x["faulting_module"].as_str().expect("faulting_module");
    let name = fm.split(" (").next().unwrap_or(fm).to_string();
    e.put_faulting_module(Some(name), src);
    let ids = x["thread_ids"].as_array().expect("thread_ids");
    e.put_threads(ids.len(), src);
    e.put_thread_ids(
        ids.iter()
            .map(|t| t.as_u64().expect("thread id") as u32)
            .collect(),
        src,
    );
}

fn upstream_symbolic_mini_pdb(e: &mut Expect) {
    upstream_symbolic_mini(e);
    // "symbolic test_objects.rs finds the inlinee `anonymous namespace'::start() at 0x2a3d
    // inside main in crash.pdb": with the PDB, frame 0 (main) carries that inline call
    // (`anonymous namespace'::crash, inlined into start, comes before it).
    let pdb = expected(
        "getsentry-symbolic",
        "symbolic-testutils/fixtures/windows/crash.pdb",
    );
    let inl = &pdb["inlinee_in_main"];
    e.inline_in_frame0 = Some(Fact {
        value: (
            jhex(&inl["address"]),
            inl["name"].as_str().expect("inlinee name").to_string(),
        ),
        source: "getsentry-symbolic/EXPECTED.json (crash.pdb inlinee_in_main)".into(),
    });
}

fn upstream_lldb_sigsegv(e: &mut Expect) {
    let src = "llvm-lldb/EXPECTED.json (sigsegv.test)";
    let x = expected(
        "llvm-lldb",
        "test/Shell/Minidump/Windows/Sigsegv/Inputs/sigsegv.dmp",
    );
    e.put_code(jhex(&x["exception_code"]) as u32, src);
    e.put_address(jhex(&x["exception_address"]), src);
    // lldb numbers threads from 1.
    e.put_thread_index(
        x["crashing_thread_index"].as_u64().expect("index") as usize - 1,
        src,
    );
    let f0 = &x["frame_0"];
    e.upstream = Some(RefStack {
        source: src.into(),
        frames: vec![RefFrame {
            module: Some(f0["module"].as_str().expect("module").into()),
            function: None,
            line: None,
            address: jhex(&f0["pc"]),
            scan: false,
        }],
        total: None,
        names_functions: false,
        caller_delta: 0,
    });
}

fn upstream_lldb_fizzbuzz(e: &mut Expect) {
    let src = "llvm-lldb/EXPECTED.json (TestMiniDump.py)";
    let x = expected(
        "llvm-lldb",
        "packages/Python/lldbsuite/test/functionalities/postmortem/minidump/fizzbuzz_no_heap.dmp",
    );
    e.put_threads(
        x["thread_count"].as_u64().expect("thread_count") as usize,
        src,
    );
    e.put_modules(x["modules"].as_array().expect("modules").len(), src);
    // "the stop description contains "0xc0000005"".
    let stop = x["stop_reason"].as_str().expect("stop_reason");
    assert!(
        stop.contains("0xc0000005"),
        "fizzbuzz: EXPECTED stop_reason changed: {stop}"
    );
    e.put_code(0xc000_0005, src);
    // lldb's `bt`: frame 0's pc, then return addresses; modules unchecked ("each with a valid
    // module").
    let pcs = x["stack_pcs_thread_0"]
        .as_array()
        .expect("stack_pcs_thread_0");
    e.upstream = Some(RefStack {
        source: src.into(),
        frames: pcs
            .iter()
            .map(|pc| RefFrame {
                module: None,
                function: None,
                line: None,
                address: jhex(pc),
                scan: false,
            })
            .collect(),
        total: Some(pcs.len()),
        names_functions: false,
        caller_delta: 0,
    });
}

fn upstream_breakpad_minidump2(e: &mut Expect) {
    let src = "google-breakpad/EXPECTED.json (minidump_processor_unittest.cc)";
    let x = expected("google-breakpad", "src/processor/testdata/minidump2.dmp");
    e.put_access_address(jhex(&x["crash_address"]), src);
    e.put_crash_reason(x["crash_reason"].as_str().expect("crash_reason"), src);
    e.put_thread_id(x["thread_0_tid"].as_u64().expect("tid") as u32, src);
    e.put_modules(
        x["module_count"].as_u64().expect("module_count") as usize,
        src,
    );
    // `processed_thread_count` is 1 because breakpad drops the thread that wrote the dump; the
    // dump itself lists 2 threads (EXPECTED's own note), which is what we report: not compared.
    //
    // The frames: breakpad's reference output `minidump2.stackwalk.out` (its `eip` lines are
    // return addresses, so addresses must be equal), cross-checked against EXPECTED's list.
    let text = read(&testdata(
        "google-breakpad/src/processor/testdata/minidump2.stackwalk.out",
    ));
    let frames = breakpad_stackwalk_frames(&text);
    let listed = x["thread_0_frames_with_symbols_dir"]
        .as_array()
        .expect("frames");
    assert_eq!(
        frames.len(),
        listed.len(),
        "minidump2: stackwalk.out vs EXPECTED frame count"
    );
    for (f, l) in frames.iter().zip(listed) {
        // EXPECTED's list comes from a unit test whose symbol supplier only has test_app: its
        // kernel32 frame has no function, where the .out (whole symbols folder, as here) has one.
        if let Some(function) = l["function"].as_str() {
            assert_eq!(
                f.function.as_deref(),
                Some(function),
                "minidump2: EXPECTED vs .out"
            );
        }
        let module = l["code_file"].as_str().map(file_name);
        assert_eq!(
            f.module.as_deref(),
            module,
            "minidump2: EXPECTED vs .out module"
        );
    }
    e.upstream = Some(RefStack {
        source: "google-breakpad minidump2.stackwalk.out".into(),
        total: Some(frames.len()),
        frames,
        names_functions: true,
        caller_delta: 0,
    });
}

fn upstream_breakpad_32bit(e: &mut Expect) {
    let src = "google-breakpad/EXPECTED.json (Test32BitCrashingAddress)";
    let x = expected(
        "google-breakpad",
        "src/processor/testdata/minidump_32bit_crash_addr.dmp",
    );
    // The record holds 0xffffffff00000045: a 32-bit process's crash address must read 0x45.
    e.put_access_address(jhex(&x["crash_address"]), src);
    e.put_crash_reason(x["crash_reason"].as_str().expect("crash_reason"), src);
}

fn upstream_breakpad_fastfail(e: &mut Expect) {
    let src = "google-breakpad/EXPECTED.json (TestFastFailException)";
    let x = expected(
        "google-breakpad",
        "src/processor/testdata/tiny-exe-fastfail.dmp",
    );
    e.put_threads(
        x["thread_count"].as_u64().expect("thread_count") as usize,
        src,
    );
    e.put_code(jhex(&x["exception_code"]) as u32, src);
    e.put_crash_reason(x["crash_reason"].as_str().expect("crash_reason"), src);
    let params = x["exception_parameters"]
        .as_array()
        .expect("exception_parameters");
    e.put_parameters(params.iter().map(jhex).collect(), src);
}

fn upstream_breakpad_cet(e: &mut Expect) {
    let src = "google-breakpad/EXPECTED.json (TestXStateAmd64ContextMinidump)";
    let x = expected(
        "google-breakpad",
        "src/processor/testdata/tiny-exe-with-cet-xsave.dmp",
    );
    e.put_no_exception(!x["crashed"].as_bool().expect("crashed"), src);
    e.put_threads(
        x["thread_count"].as_u64().expect("thread_count") as usize,
        src,
    );
}

fn upstream_invalid_parameter(e: &mut Expect) {
    // The corpus's own reading of the dump (no upstream assertion exists for it).
    let src = "rust-minidump/EXPECTED.json (corpus reading)";
    let x = expected("rust-minidump", "testdata/invalid-parameter.dmp");
    e.put_threads(x["threads"].as_u64().expect("threads") as usize, src);
    e.put_modules(x["modules"].as_u64().expect("modules") as usize, src);
    // "raised with exception address 0": no module holds it.
    e.put_address(0, src);
    e.put_faulting_module(None, src);
}

// ---------------------------------------------------------------------------------------------
// Expectations

#[derive(Clone, Debug)]
struct Fact<T> {
    value: T,
    source: String,
}

/// A reference frame.
#[derive(Clone, Debug)]
struct RefFrame {
    /// Module file name (`test_app.exe`); `None`: not checked.
    module: Option<String>,
    /// Function name; `None`: the reference has no symbol here.
    function: Option<String>,
    /// Source line, when the reference has one.
    line: Option<u32>,
    /// Frame 0: the IP. Callers: the return address minus `caller_delta`.
    address: u64,
    /// Found by stack scanning.
    scan: bool,
}

/// A reference call stack.
#[derive(Clone, Debug)]
struct RefStack {
    source: String,
    frames: Vec<RefFrame>,
    /// How many frames the whole reference stack has, when known.
    total: Option<usize>,
    /// Whether the reference names functions (a frame without a name then means no symbol).
    names_functions: bool,
    /// What the reference subtracted from return addresses (0: it prints them as they are).
    caller_delta: u64,
}

/// Another thread of minidump-stackwalk's output.
#[derive(Clone, Debug)]
struct ThreadRef {
    index: usize,
    stack: RefStack,
}

/// Everything expected of one dump.
#[derive(Default)]
struct Expect {
    code: Option<Fact<u32>>,
    address: Option<Fact<u64>>,
    /// The inaccessible address of an access violation (parameter 1).
    access_address: Option<Fact<u64>>,
    parameters: Option<Fact<Vec<u64>>>,
    flags: Option<Fact<u32>>,
    /// minidump-stackwalk's / breakpad's crash reason (`EXCEPTION_ACCESS_VIOLATION_WRITE`,
    /// `EXCEPTION_STACK_BUFFER_OVERRUN / FAST_FAIL_FATAL_APP_EXIT`, `unknown 0xe0001234`).
    crash_reason: Option<Fact<String>>,
    thread_id: Option<Fact<u32>>,
    thread_index: Option<Fact<usize>>,
    /// File name of the module holding the exception address (`None`: no module).
    faulting_module: Option<Fact<Option<String>>>,
    no_exception: Option<Fact<bool>>,
    modules: Option<Fact<usize>>,
    threads: Option<Fact<usize>>,
    /// Thread ids in dump order.
    thread_ids: Option<Fact<Vec<u32>>>,
    /// Frame 0's function has this inline call at the IP: (module offset, name).
    inline_in_frame0: Option<Fact<(u64, String)>>,
    /// minidump-stackwalk's crashing thread.
    stackwalk: Option<RefStack>,
    /// Upstream frames (breakpad, lldb).
    upstream: Option<RefStack>,
    /// minidump-stackwalk's other threads, each walked from its own context.
    other_threads: Vec<ThreadRef>,
    /// Ids of other threads minidump-stackwalk lists without frames.
    other_threads_skipped: Vec<u32>,
    /// The thread that wrote the dump (Breakpad info stream), when the dump says.
    dump_thread_id: Option<u32>,
    /// Where a stronger source overrode a different value of a weaker one.
    overrides: Vec<String>,
}

/// Sets a fact; a later (stronger) source replaces an earlier one, noting any disagreement.
fn put<T: PartialEq + Debug>(
    slot: &mut Option<Fact<T>>,
    overrides: &mut Vec<String>,
    name: &str,
    value: T,
    source: &str,
) {
    if let Some(old) = slot.as_ref() {
        if old.value != value {
            overrides.push(format!(
                "{name}: {source} says {value:x?}, {} said {:x?}",
                old.source, old.value
            ));
        }
    }
    *slot = Some(Fact {
        value,
        source: source.to_string(),
    });
}

impl Expect {
    fn put_code(&mut self, v: u32, s: &str) {
        put(&mut self.code, &mut self.overrides, "exception.code", v, s);
    }
    fn put_address(&mut self, v: u64, s: &str) {
        put(
            &mut self.address,
            &mut self.overrides,
            "exception.address",
            v,
            s,
        );
    }
    fn put_access_address(&mut self, v: u64, s: &str) {
        put(
            &mut self.access_address,
            &mut self.overrides,
            "exception.access_address",
            v,
            s,
        );
    }
    fn put_parameters(&mut self, v: Vec<u64>, s: &str) {
        put(
            &mut self.parameters,
            &mut self.overrides,
            "exception.parameters",
            v,
            s,
        );
    }
    fn put_flags(&mut self, v: u32, s: &str) {
        put(
            &mut self.flags,
            &mut self.overrides,
            "exception.flags",
            v,
            s,
        );
    }
    fn put_crash_reason(&mut self, v: &str, s: &str) {
        // breakpad's unit test names only the fast-fail code of what minidump-stackwalk calls
        // `EXCEPTION_STACK_BUFFER_OVERRUN / FAST_FAIL_…`: the same reason, not a disagreement.
        if let Some(old) = self.crash_reason.as_mut() {
            if same_crash_reason(&old.value, v) {
                *old = Fact {
                    value: v.to_string(),
                    source: s.to_string(),
                };
                return;
            }
        }
        put(
            &mut self.crash_reason,
            &mut self.overrides,
            "crash_reason",
            v.to_string(),
            s,
        );
    }
    fn put_thread_ids(&mut self, v: Vec<u32>, s: &str) {
        put(
            &mut self.thread_ids,
            &mut self.overrides,
            "thread_ids",
            v,
            s,
        );
    }
    fn put_thread_id(&mut self, v: u32, s: &str) {
        put(
            &mut self.thread_id,
            &mut self.overrides,
            "exception.thread_id",
            v,
            s,
        );
    }
    fn put_thread_index(&mut self, v: usize, s: &str) {
        put(
            &mut self.thread_index,
            &mut self.overrides,
            "exception.thread_index",
            v,
            s,
        );
    }
    fn put_faulting_module(&mut self, v: Option<String>, s: &str) {
        put(
            &mut self.faulting_module,
            &mut self.overrides,
            "faulting_module",
            v,
            s,
        );
    }
    fn put_no_exception(&mut self, v: bool, s: &str) {
        put(
            &mut self.no_exception,
            &mut self.overrides,
            "no_exception",
            v,
            s,
        );
    }
    fn put_modules(&mut self, v: usize, s: &str) {
        put(&mut self.modules, &mut self.overrides, "modules", v, s);
    }
    fn put_threads(&mut self, v: usize, s: &str) {
        put(&mut self.threads, &mut self.overrides, "threads", v, s);
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(rel: &str) -> Value {
    let path = testdata(rel);
    serde_json::from_str(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The payload of an insta snapshot (what follows its `---` header).
fn snapshot_text(rel: &str) -> String {
    let text = read(&testdata(rel));
    let body = text.splitn(3, "---\n").nth(2);
    body.unwrap_or_else(|| panic!("{rel}: not an insta snapshot"))
        .to_string()
}

/// `0x1234` (or `0x1234 **`, as minidump-stackwalk marks odd addresses) as a number.
fn hex(text: &str) -> u64 {
    let t = text.split_whitespace().next().unwrap_or("");
    let digits = t.trim_start_matches("0x").trim_start_matches("0X");
    u64::from_str_radix(digits, 16).unwrap_or_else(|e| panic!("not a hex number: {text:?} ({e})"))
}

fn jhex(v: &Value) -> u64 {
    hex(v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}")))
}

/// The exception code behind a minidump-stackwalk crash type (the ones this corpus has).
fn code_of_crash_type(ty: &str) -> Option<u32> {
    let head = ty.split(" / ").next().unwrap_or(ty);
    Some(match head {
        "EXCEPTION_ACCESS_VIOLATION_READ"
        | "EXCEPTION_ACCESS_VIOLATION_WRITE"
        | "EXCEPTION_ACCESS_VIOLATION_EXEC" => 0xc000_0005,
        "EXCEPTION_STACK_OVERFLOW" => 0xc000_00fd,
        "EXCEPTION_BREAKPOINT" => 0x8000_0003,
        "EXCEPTION_STACK_BUFFER_OVERRUN" => 0xc000_0409,
        "STATUS_INVALID_PARAMETER" => 0xc000_000d,
        "EXCEPTION_INT_DIVIDE_BY_ZERO" => 0xc000_0094,
        _ => return None,
    })
}

/// The file name of a Windows or Unix path.
fn file_name(path: &str) -> &str {
    path.rsplit(['\\', '/']).next().unwrap_or(path)
}

/// The frames of minidump-stackwalk JSON.
fn stackwalk_frames(frames: &Value) -> Vec<RefFrame> {
    let frames = frames.as_array().expect("frames array");
    frames
        .iter()
        .take(TOP)
        .map(|f| RefFrame {
            module: f["module"].as_str().map(str::to_string),
            function: f["function"].as_str().map(str::to_string),
            line: f["line"].as_u64().map(|l| l as u32),
            address: jhex(&f["offset"]),
            scan: f["trust"].as_str() == Some("scan"),
        })
        .collect()
}

/// Loads minidump-stackwalk's `--json` output.
fn load_stackwalk_json(e: &mut Expect, v: &Value, source: &str, caller_delta: u64) {
    let modules = v["modules"].as_array().expect("modules");
    e.put_modules(modules.len(), source);
    e.put_threads(
        v["thread_count"].as_u64().expect("thread_count") as usize,
        source,
    );
    let threads = v["threads"].as_array().expect("threads");
    let ids = threads
        .iter()
        .map(|t| t["thread_id"].as_u64().expect("thread_id") as u32);
    e.put_thread_ids(ids.collect(), source);
    let ci = &v["crash_info"];
    // minidump-stackwalk walks the crashing thread from the exception context (that is the
    // crashing-thread comparison); every other thread from its own context.
    let main_index = ci["crashing_thread"].as_u64().unwrap_or(0) as usize;
    for (index, t) in threads.iter().enumerate().filter(|(i, _)| *i != main_index) {
        let frames = t["frames"].as_array().map(Vec::len).unwrap_or(0);
        if frames == 0 {
            let tid = t["thread_id"].as_u64().expect("thread_id") as u32;
            e.other_threads_skipped.push(tid);
            continue;
        }
        e.other_threads.push(ThreadRef {
            index,
            stack: RefStack {
                source: format!("{source} threads[{index}]"),
                frames: stackwalk_frames(&t["frames"]),
                total: Some(frames),
                names_functions: true,
                caller_delta,
            },
        });
    }
    let thread = match ci["type"].as_str() {
        None => {
            e.put_no_exception(true, source);
            // No crashing thread: compare the first thread's own stack.
            &v["threads"][0]
        }
        Some(ty) => {
            e.put_no_exception(false, source);
            e.put_crash_reason(ty, source);
            if let Some(code) = code_of_crash_type(ty) {
                e.put_code(code, source);
            }
            let addr = jhex(&ci["address"]);
            if ty.starts_with("EXCEPTION_ACCESS_VIOLATION") {
                e.put_access_address(addr, source);
            } else {
                e.put_address(addr, source);
            }
            let thread = &v["crashing_thread"];
            e.put_thread_id(
                thread["thread_id"].as_u64().expect("thread_id") as u32,
                source,
            );
            thread
        }
    };
    e.stackwalk = Some(RefStack {
        source: source.to_string(),
        frames: stackwalk_frames(&thread["frames"]),
        total: thread["frames"].as_array().map(Vec::len),
        names_functions: true,
        caller_delta,
    });
}

/// The module (file name) holding `addr` in minidump-stackwalk's module list.
fn stackwalk_module_at(v: &Value, addr: u64) -> Option<String> {
    v["modules"].as_array()?.iter().find_map(|m| {
        let (base, end) = (jhex(&m["base_addr"]), jhex(&m["end_addr"]));
        (base <= addr && addr < end).then(|| m["filename"].as_str().unwrap_or("").to_string())
    })
}

/// Loads the raw exception record from `minidump-stackwalk --dump --brief`.
fn load_dump_brief(e: &mut Expect, text: &str, source: &str) {
    /// The `key = value` lines of the block that starts with the line `header`.
    fn block<'a>(text: &'a str, header: &str) -> Option<Vec<(&'a str, &'a str)>> {
        let mut lines = text.lines().skip_while(|l| l.trim() != header);
        lines.next()?;
        let pairs = lines.take_while(|l| !l.trim().is_empty()).filter_map(|l| {
            let (k, v) = l.split_once(" = ")?;
            Some((k.trim(), v.trim()))
        });
        Some(pairs.collect())
    }
    if let Some(info) = block(text, "MINIDUMP_BREAKPAD_INFO") {
        let writer = info.iter().find(|(k, _)| *k == "dump_thread_id");
        // `(invalid)` when the validity flags say the field is unset.
        let id = writer.and_then(|(_, v)| u32::from_str_radix(v.trim_start_matches("0x"), 16).ok());
        e.dump_thread_id = id;
    }
    let Some(exception) = block(text, "MINIDUMP_EXCEPTION") else {
        return;
    };
    let mut params = Vec::new();
    for (key, value) in exception {
        match key {
            "thread_id" => e.put_thread_id(hex(value) as u32, source),
            "exception_record.exception_code" => e.put_code(hex(value) as u32, source),
            "exception_record.exception_address" => e.put_address(hex(value), source),
            "exception_record.exception_flags" => e.put_flags(hex(value) as u32, source),
            k if k.starts_with("exception_record.exception_information[") => {
                params.push(hex(value))
            }
            _ => {}
        }
    }
    e.put_parameters(params, source);
}

/// Thread 0's frames from breakpad's `minidump_stackwalk` text output.
fn breakpad_stackwalk_frames(text: &str) -> Vec<RefFrame> {
    let mut frames: Vec<RefFrame> = Vec::new();
    let mut in_thread = false;
    for line in text.lines() {
        if line.starts_with("Thread ") {
            in_thread = line.contains("(crashed)");
            continue;
        }
        if line.starts_with("Loaded modules") {
            break;
        }
        if !in_thread {
            continue;
        }
        let t = line.trim_start();
        let header = t
            .split_once("  ")
            .filter(|(n, _)| n.parse::<usize>().is_ok());
        if let Some((_, rest)) = header {
            let (module, function) = match rest.split_once('!') {
                Some((m, f)) => {
                    let f = f.split(" [").next().unwrap_or(f);
                    let f = f.split(" + ").next().unwrap_or(f);
                    (m.to_string(), Some(f.trim().to_string()))
                }
                None => (rest.split(" + ").next().unwrap_or(rest).to_string(), None),
            };
            let line_no = rest
                .split_once(" [")
                .and_then(|(_, s)| s.split(" : ").nth(1))
                .and_then(|s| s.split_whitespace().next())
                .and_then(|s| s.parse().ok());
            frames.push(RefFrame {
                module: Some(module),
                function,
                line: line_no,
                address: 0,
                scan: false,
            });
        } else if let Some(eip) = t.strip_prefix("eip = ") {
            frames.last_mut().expect("eip before a frame").address = hex(eip);
        } else if let Some(how) = t.strip_prefix("Found by: ") {
            frames.last_mut().expect("Found by before a frame").scan = how.contains("scanning");
        }
    }
    assert!(
        frames.iter().all(|f| f.address != 0),
        "breakpad .out: a frame without eip"
    );
    frames
}

/// Loads a winelab facts file (exception and counts parsed from the dump; frames from
/// minidump-stackwalk 0.27.0 on the CodeView-patched dump with `crashy.sym`).
fn load_winelab(e: &mut Expect, rel: &str) {
    let v = json(rel);
    let src = rel;
    let x = &v["exception"];
    let code = jhex(&x["code"]) as u32;
    e.put_no_exception(false, src);
    e.put_code(code, src);
    e.put_address(jhex(&x["address"]), src);
    e.put_flags(jhex(&x["flags"]) as u32, src);
    let reason = v["stackwalk_crash_reason"]
        .as_str()
        .expect("stackwalk_crash_reason");
    e.put_crash_reason(reason, &format!("{rel} (minidump-stackwalk)"));
    let params: Vec<u64> = x["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .map(jhex)
        .collect();
    if code == 0xc000_0005 {
        e.put_access_address(params[1], src);
    }
    e.put_parameters(params, src);
    e.put_thread_id(
        v["crashing_thread_id"]
            .as_u64()
            .expect("crashing_thread_id") as u32,
        src,
    );
    e.put_faulting_module(v["faulting_module"].as_str().map(str::to_string), src);
    e.put_modules(
        v["module_count"].as_u64().expect("module_count") as usize,
        src,
    );
    e.put_threads(
        v["thread_count"].as_u64().expect("thread_count") as usize,
        src,
    );
    let frames = v["top_frames"].as_array().expect("top_frames");
    e.stackwalk = Some(RefStack {
        source: format!("{rel} (minidump-stackwalk + crashy.sym)"),
        frames: frames
            .iter()
            .map(|f| RefFrame {
                module: f["module"].as_str().map(str::to_string),
                function: f["function"].as_str().map(str::to_string),
                line: f["source"]
                    .as_str()
                    .and_then(|s| s.rsplit(':').next())
                    .and_then(|l| l.parse().ok()),
                address: jhex(&f["instruction"]),
                scan: f["trust"].as_str() == Some("scan"),
            })
            .collect(),
        total: None,
        names_functions: true,
        caller_delta: 1,
    });
}

/// Everything expected of a case.
fn expectations(case: &Case, arch_caller_delta: u64) -> Expect {
    let mut e = Expect::default();
    match case.stackwalk {
        Stackwalk::Generated(name) => {
            let src = format!("{GENERATED}/{name}.json");
            let v = json(&src);
            load_stackwalk_json(&mut e, &v, &src, arch_caller_delta);
            let brief = format!("{GENERATED}/{name}.dump-brief.txt");
            if testdata_dir_has(&brief) {
                load_dump_brief(&mut e, &read(&testdata(&brief)), &brief);
            }
            faulting_module_from_stackwalk(&mut e, &v, &src);
        }
        Stackwalk::Snapshot { json, dump_brief } => {
            let v: Value = serde_json::from_str(&snapshot_text(json))
                .unwrap_or_else(|err| panic!("{json}: {err}"));
            load_stackwalk_json(&mut e, &v, json, arch_caller_delta);
            load_dump_brief(&mut e, &snapshot_text(dump_brief), dump_brief);
            faulting_module_from_stackwalk(&mut e, &v, json);
        }
        Stackwalk::Winelab(rel) => load_winelab(&mut e, rel),
    }
    (case.upstream)(&mut e);
    e
}

fn faulting_module_from_stackwalk(e: &mut Expect, v: &Value, src: &str) {
    if e.no_exception.as_ref().is_some_and(|f| f.value) {
        return;
    }
    if let Some(addr) = e.address.as_ref().map(|f| f.value) {
        e.put_faulting_module(
            stackwalk_module_at(v, addr),
            &format!("{src} (module list)"),
        );
    }
}

fn testdata_dir_has(rel: &str) -> bool {
    ntdbg_testutil::testdata_dir().is_some_and(|d| d.join(rel).exists())
}

// ---------------------------------------------------------------------------------------------
// Running a case

/// Result of one group of checks.
#[derive(Default, Clone, Debug)]
struct Tally {
    checked: usize,
    failed: usize,
    explained: usize,
}

impl Tally {
    fn cell(&self) -> String {
        let passed = self.checked - self.failed;
        let mut s = match (self.checked, self.failed) {
            (0, _) => return "n/a".into(),
            (n, 0) => format!("ok {passed}/{n}"),
            (n, _) => format!("FAIL {passed}/{n}"),
        };
        if self.explained > 0 {
            let _ = write!(s, " ({} explained)", self.explained);
        }
        s
    }
}

/// Frame comparison counts.
#[derive(Default, Clone, Debug)]
struct FrameTally {
    matched: usize,
    total: usize,
    /// Of `matched`: frames where we name a function the reference could not.
    richer: usize,
    /// Mismatches explained by a known entry.
    explained: usize,
}

impl FrameTally {
    fn cell(&self) -> String {
        if self.total == 0 {
            return "–".into();
        }
        let mut s = format!("{}/{}", self.matched, self.total);
        if self.explained > 0 {
            let _ = write!(s, " ({} explained)", self.explained);
        }
        s
    }
}

#[derive(Default, Clone, Debug)]
struct Row {
    name: String,
    exception: Tally,
    counts: Tally,
    frames: FrameTally,
    scan: FrameTally,
    upstream_frames: FrameTally,
    upstream_frames_source: String,
    /// Other threads: how many were compared, their non-scan and scan frames.
    other_threads: usize,
    other_frames: FrameTally,
    other_scan: FrameTally,
    notes: Vec<String>,
    failures: Vec<String>,
    known_used: Vec<&'static str>,
}

impl Row {
    /// Records a check. A failing check with a known entry is explained (a note, or a known-bug
    /// note); without one it is a failure of the case.
    fn check(
        &mut self,
        known: &[Known],
        key: &str,
        ok: bool,
        detail: impl FnOnce() -> String,
    ) -> Check {
        if ok {
            return Check::Ok;
        }
        let detail = detail();
        match known.iter().find(|k| k.key == key) {
            Some(k) => {
                self.known_used.push(k.key);
                match k.kind {
                    KnownKind::OursRight => {
                        self.notes
                            .push(format!("{key}: {detail} — ours is right: {}", k.why));
                        Check::Explained
                    }
                    KnownKind::Bug => {
                        self.notes
                            .push(format!("KNOWN BUG {key}: {detail} — {}", k.why));
                        Check::Explained
                    }
                }
            }
            None => {
                self.failures
                    .push(format!("{}: {key}: {detail}", self.name));
                Check::Failed
            }
        }
    }
}

#[derive(PartialEq, Eq)]
enum Check {
    Ok,
    Explained,
    Failed,
}

fn tally(t: &mut Tally, c: Check) {
    t.checked += 1;
    match c {
        Check::Ok => {}
        Check::Explained => t.explained += 1,
        Check::Failed => t.failed += 1,
    }
}

/// Opens the case's dump (decompressing `.xz` into the target's temporary folder).
fn dump_path(case: &Case) -> PathBuf {
    let src = testdata(case.dump);
    let Some(stem) = case.dump.strip_suffix(".xz") else {
        return src;
    };
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(file_name(stem));
    let meta = std::fs::metadata(&src).expect("xz metadata");
    // Reuse an earlier decompression when the marker says it came from this very file.
    let marker = out.with_extension("dmp.source");
    let stamp = format!("{} {:?}", meta.len(), meta.modified().ok());
    if out.exists() && std::fs::read_to_string(&marker).ok().as_deref() == Some(stamp.as_str()) {
        return out;
    }
    let mut input = liblzma::read::XzDecoder::new(std::fs::File::open(&src).expect("open xz"));
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut input, &mut bytes)
        .unwrap_or_else(|e| panic!("{}: xz: {e}", src.display()));
    let tmp = out.with_extension("dmp.partial");
    std::fs::write(&tmp, &bytes).expect("write decompressed dump");
    std::fs::rename(&tmp, &out).expect("rename decompressed dump");
    std::fs::write(&marker, stamp).expect("write marker");
    out
}

fn symbol_path(case: &Case) -> String {
    let mut dirs = Vec::new();
    let mut linked: Option<PathBuf> = None;
    for rel in case.symbols {
        let path = testdata(rel);
        if path.is_dir() {
            dirs.push(path.display().to_string());
            continue;
        }
        let dir = linked.get_or_insert_with(|| {
            let slug: String = case
                .name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join("upstream-symbols")
                .join(slug);
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("create symbol link folder");
            dir
        });
        let link = dir.join(file_name(rel));
        #[cfg(unix)]
        std::os::unix::fs::symlink(&path, &link).expect("symlink symbol file");
        #[cfg(not(unix))]
        std::fs::copy(&path, &link).expect("copy symbol file");
    }
    if let Some(dir) = linked {
        dirs.push(dir.display().to_string());
    }
    dirs.join(";")
}

fn run_case(case: &Case) -> Row {
    let mut row = Row {
        name: case.name.to_string(),
        ..Row::default()
    };
    if !case.note.is_empty() {
        row.notes.push(case.note.to_string());
    }
    let path = dump_path(case);
    // An empty symbol path means no symbols at all (not the dump's folder).
    let session = Session::open_dump(&path, Some(&symbol_path(case)))
        .unwrap_or_else(|e| panic!("{}: open_dump failed: {e}", case.name));
    let report = analyze(&session);
    let arch = session.target().arch();
    let caller_delta = if arch.name() == "arm64" { 4 } else { 1 };
    let e = expectations(case, caller_delta);
    row.notes
        .extend(e.overrides.iter().map(|o| format!("sources disagree: {o}")));
    check_event(case, &mut row, &e, &report, &session);
    check_counts(case, &mut row, &e, &report, &session);

    let frames: Vec<Frame> = if e.no_exception.as_ref().is_some_and(|f| f.value) {
        let stack = session.thread_stack(0);
        stack
            .unwrap_or_else(|err| panic!("{}: thread_stack(0): {err}", case.name))
            .frames
    } else {
        let stack = session.event_stack();
        stack
            .unwrap_or_else(|err| panic!("{}: event_stack: {err}", case.name))
            .frames
    };
    check_report_stack(case, &mut row, &report, &frames);
    check_inline_in_frame0(case, &mut row, &e, &frames);
    let physical: Vec<&Frame> = frames.iter().filter(|f| !f.inline).collect();
    if let Some(r) = &e.stackwalk {
        compare_stack(case, &mut row, &session, &physical, r, Which::Stackwalk);
    }
    for t in &e.other_threads {
        compare_thread(case, &mut row, &session, t);
    }
    if !e.other_threads_skipped.is_empty() {
        let writer = e
            .other_threads_skipped
            .iter()
            .all(|t| Some(*t) == e.dump_thread_id);
        row.notes.push(format!(
            "thread(s) {:?} not compared: minidump-stackwalk lists {} without frames{}",
            e.other_threads_skipped,
            if e.other_threads_skipped.len() == 1 {
                "it"
            } else {
                "them"
            },
            if writer {
                " (the dump-writer thread of the Breakpad info stream)"
            } else {
                ""
            }
        ));
    }
    if let Some(r) = &e.upstream {
        compare_stack(case, &mut row, &session, &physical, r, Which::Upstream);
    }
    row
}

fn check_event(case: &Case, row: &mut Row, e: &Expect, report: &Report, session: &Session) {
    let k = case.known;
    let ev = &report.event;
    let mut t = Tally::default();
    if let Some(f) = &e.no_exception {
        let ours = ev.kind == "none";
        let c = row.check(k, "no_exception", ours == f.value, || {
            format!(
                "event type {:?}, {} says no exception = {}",
                ev.kind, f.source, f.value
            )
        });
        tally(&mut t, c);
        if f.value {
            row.exception = t;
            return;
        }
    }
    let num = |s: &Option<String>| s.as_deref().map(hex);
    if let Some(f) = &e.code {
        let ours = num(&ev.code);
        let c = row.check(
            k,
            "exception.code",
            ours == Some(u64::from(f.value)),
            || format!("ours {:?}, {} says {:#x}", ev.code, f.source, f.value),
        );
        tally(&mut t, c);
    }
    if let Some(f) = &e.address {
        let ours = num(&ev.address);
        let c = row.check(k, "exception.address", ours == Some(f.value), || {
            format!("ours {:?}, {} says {:#x}", ev.address, f.source, f.value)
        });
        tally(&mut t, c);
    }
    let ptr_mask = if report.dump.arch == "x86" {
        0xffff_ffff
    } else {
        u64::MAX
    };
    if let Some(f) = &e.access_address {
        let ours = ev.parameters.get(1).map(|p| hex(p));
        let c = row.check(k, "exception.access_address", ours == Some(f.value), || {
            format!(
                "ours {:?}, {} says {:#x}",
                ev.parameters.get(1),
                f.source,
                f.value
            )
        });
        tally(&mut t, c);
    }
    if let Some(f) = &e.parameters {
        // Parameters are compared at the pointer width: a 32-bit writer may leave garbage in the
        // high half (minidump_32bit_crash_addr.dmp), which a 32-bit processor must drop.
        let ours: Vec<u64> = ev.parameters.iter().map(|p| hex(p)).collect();
        let want: Vec<u64> = f.value.iter().map(|p| p & ptr_mask).collect();
        let c = row.check(k, "exception.parameters", ours == want, || {
            format!("ours {:?}, {} says {:x?}", ev.parameters, f.source, want)
        });
        tally(&mut t, c);
    }
    let event = session.target().event();
    if let Some(f) = &e.flags {
        let ours = event.map(|ev| ev.flags);
        let c = row.check(k, "exception.flags", ours == Some(f.value), || {
            format!("ours {ours:x?}, {} says {:#x}", f.source, f.value)
        });
        tally(&mut t, c);
    }
    if let Some(f) = &e.crash_reason {
        let ours = event.map(|ev| crash_reason(ev, session.arch().pointer_size()));
        let ok = ours
            .as_deref()
            .is_some_and(|o| same_crash_reason(o, &f.value));
        let c = row.check(k, "crash_reason", ok, || {
            format!("ours {ours:?}, {} says {:?}", f.source, f.value)
        });
        tally(&mut t, c);
    }
    if let Some(f) = &e.thread_id {
        let ours = num(&ev.thread_id);
        let c = row.check(
            k,
            "exception.thread_id",
            ours == Some(u64::from(f.value)),
            || {
                format!(
                    "ours {:?}, {} says {} ({:#x})",
                    ev.thread_id, f.source, f.value, f.value
                )
            },
        );
        tally(&mut t, c);
    }
    if let Some(f) = &e.thread_index {
        let ours = session.event_thread_index();
        let c = row.check(k, "exception.thread_index", ours == Some(f.value), || {
            format!("ours {ours:?}, {} says {}", f.source, f.value)
        });
        tally(&mut t, c);
    }
    if let Some(f) = &e.faulting_module {
        let ours = report
            .faulting_module
            .as_ref()
            .map(|m| m.name.to_ascii_lowercase());
        let want = f.value.as_ref().map(|m| file_name(m).to_ascii_lowercase());
        let c = row.check(k, "faulting_module", ours == want, || {
            format!("ours {ours:?}, {} says {:?}", f.source, f.value)
        });
        tally(&mut t, c);
    }
    row.exception = t;
}

fn check_counts(case: &Case, row: &mut Row, e: &Expect, report: &Report, session: &Session) {
    let k = case.known;
    let mut t = Tally::default();
    if let Some(f) = &e.modules {
        let c = row.check(k, "modules", report.dump.modules == f.value, || {
            format!(
                "ours {}, {} says {}",
                report.dump.modules, f.source, f.value
            )
        });
        tally(&mut t, c);
    }
    if let Some(f) = &e.threads {
        let c = row.check(k, "threads", report.dump.threads == f.value, || {
            format!(
                "ours {}, {} says {}",
                report.dump.threads, f.source, f.value
            )
        });
        tally(&mut t, c);
    }
    if let Some(f) = &e.thread_ids {
        let ours: Vec<u32> = session.target().threads().iter().map(|t| t.id).collect();
        let c = row.check(k, "thread_ids", ours == f.value, || {
            format!("ours {ours:?}, {} says {:?}", f.source, f.value)
        });
        tally(&mut t, c);
    }
    row.counts = t;
}

/// Our crash reason in minidump-stackwalk's words: the code's name, the access kind of an
/// access violation, the fast-fail code's name.
fn crash_reason(ev: &ntdbg_targets::ExceptionEvent, pointer_size: usize) -> String {
    use ntdbg_analysis::exception::{decode, Access, ExceptionKind};
    let d = decode(ev, pointer_size);
    match d.kind {
        ExceptionKind::AccessViolation {
            access: Some(a),
            in_page: false,
            ..
        } => {
            let suffix = match a {
                Access::Read => "READ",
                Access::Write => "WRITE",
                Access::Execute => "EXEC",
            };
            format!("{}_{suffix}", d.name)
        }
        ExceptionKind::FastFail { code: Some(c) } => {
            match ntdbg_analysis::ntstatus::fast_fail_name(c) {
                Some(n) => format!("{} / {n}", d.name),
                None => d.name,
            }
        }
        _ => d.name,
    }
}

/// Crash reasons agree when the expected one's parts (`A / B`) end ours, names compared without
/// their `EXCEPTION_` / `STATUS_` prefix (minidump-stackwalk says EXCEPTION_STACK_BUFFER_OVERRUN
/// where the NTSTATUS is STATUS_STACK_BUFFER_OVERRUN; breakpad's unit test names only the
/// fast-fail code) and an unnamed code as `unknown 0x…` = `0x…`.
fn same_crash_reason(ours: &str, expected: &str) -> bool {
    fn norm(part: &str) -> String {
        let p = part.trim();
        let p = p.strip_prefix("unknown ").unwrap_or(p);
        let p = p
            .strip_prefix("EXCEPTION_")
            .or_else(|| p.strip_prefix("STATUS_"))
            .unwrap_or(p);
        p.to_ascii_uppercase()
    }
    let ours: Vec<String> = ours.split(" / ").map(norm).collect();
    let want: Vec<String> = expected.split(" / ").map(norm).collect();
    ours.ends_with(&want)
}

/// `Report.stack` must be the same walk as `Session::event_stack`.
/// (Without an exception, the report shows the current thread's stack: thread 0's.)
fn check_report_stack(case: &Case, row: &mut Row, report: &Report, frames: &[Frame]) {
    let ours: Vec<String> = report.stack.iter().map(|s| s.address.clone()).collect();
    let walk: Vec<String> = frames
        .iter()
        .take(ours.len())
        .map(|f| format!("{:#x}", f.instruction))
        .collect();
    let ok = ours == walk && ours.len() == frames.len().min(ntdbg_analysis::REPORT_FRAMES);
    row.check(case.known, "report.stack", ok, || {
        format!("Report.stack {ours:?} is not event_stack() {walk:?}")
    });
}

/// The outermost inline call inside physical frame 0 (the inlinee of frame 0's function that
/// covers the IP; deeper inlinees come before it, innermost first).
fn check_inline_in_frame0(case: &Case, row: &mut Row, e: &Expect, frames: &[Frame]) {
    let Some(f) = &e.inline_in_frame0 else { return };
    let (rva, name) = &f.value;
    let outermost = frames.iter().take_while(|t| t.inline).last();
    let ok = outermost.is_some_and(|t| {
        t.module_base.map(|b| t.instruction - b) == Some(*rva)
            && bare(t.function.as_deref().unwrap_or("")) == bare(name)
    });
    let c = row.check(case.known, "inline frame", ok, || {
        let chain: Vec<_> = frames
            .iter()
            .take_while(|t| t.inline)
            .map(|t| t.function.clone())
            .collect();
        format!(
            "inline calls in frame 0 (innermost first) {chain:?}, {} says {name} at {rva:#x}",
            f.source
        )
    });
    // Counted with the upstream frames.
    let t = &mut row.upstream_frames;
    t.total += 1;
    match c {
        Check::Ok => t.matched += 1,
        Check::Explained => t.explained += 1,
        Check::Failed => {}
    }
    add_source(&mut row.upstream_frames_source, &f.source);
}

fn add_source(sources: &mut String, source: &str) {
    if !sources.is_empty() {
        sources.push_str(" + ");
    }
    sources.push_str(source);
}

/// One of the other threads: our walk from the thread's own context against
/// minidump-stackwalk's, same rules as the crashing thread (scan frames never fail).
fn compare_thread(case: &Case, row: &mut Row, session: &Session, t: &ThreadRef) {
    row.other_threads += 1;
    let stack = session.thread_stack(t.index);
    let frames = stack
        .unwrap_or_else(|err| panic!("{}: thread_stack({}): {err}", case.name, t.index))
        .frames;
    let ours: Vec<&Frame> = frames.iter().filter(|f| !f.inline).collect();
    let r = &t.stack;
    for (i, want) in r.frames.iter().enumerate() {
        let verdict = compare_frame(session, i, ours.get(i).copied(), want, r.caller_delta);
        let tally = if want.scan {
            &mut row.other_scan
        } else {
            &mut row.other_frames
        };
        tally.total += 1;
        match verdict {
            Ok(_) => tally.matched += 1,
            Err(_) if want.scan => {}
            Err(why) => {
                let key = format!("thread {} frame {i}", t.index);
                let c = row.check(case.known, &key, false, || format!("{why} ({})", r.source));
                if c == Check::Explained {
                    row.other_frames.explained += 1;
                }
            }
        }
    }
    if let Some(total) = r.total.filter(|n| *n < TOP) {
        let key = format!("thread {} frame count", t.index);
        row.check(case.known, &key, ours.len() == total, || {
            format!("we have {} frames, {} has {total}", ours.len(), r.source)
        });
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    Stackwalk,
    Upstream,
}

fn compare_stack(
    case: &Case,
    row: &mut Row,
    session: &Session,
    ours: &[&Frame],
    r: &RefStack,
    which: Which,
) {
    let mut frames = FrameTally::default();
    let mut scan = FrameTally::default();
    let mut mismatched_scan = Vec::new();
    let mut explained_scan: Vec<(&str, String)> = Vec::new();
    for (i, want) in r.frames.iter().take(TOP).enumerate() {
        let got = ours.get(i).copied();
        let verdict = compare_frame(session, i, got, want, r.caller_delta);
        if want.scan && which == Which::Stackwalk {
            scan.total += 1;
            match verdict {
                Ok(_) => scan.matched += 1,
                Err(why) => {
                    // Never a failure; a known entry may say why ours is the better frame.
                    let key = format!("scan frame {i}");
                    match case.known.iter().find(|k| k.key == key) {
                        Some(k) => {
                            row.known_used.push(k.key);
                            scan.explained += 1;
                            explained_scan.push((k.why, why));
                        }
                        None => mismatched_scan.push(why),
                    }
                }
            }
            continue;
        }
        frames.total += 1;
        let key = match which {
            Which::Stackwalk => format!("frame {i}"),
            Which::Upstream => format!("upstream frame {i}"),
        };
        match verdict {
            Ok(richer) => {
                frames.matched += 1;
                if richer && r.names_functions {
                    frames.richer += 1;
                }
            }
            Err(why) => {
                let c = row.check(case.known, &key, false, || format!("{why} ({})", r.source));
                if c == Check::Explained {
                    frames.explained += 1;
                }
            }
        }
    }
    // A short reference stack: we must not invent frames after its end either.
    if let Some(total) = r.total.filter(|t| *t < TOP) {
        let key = match which {
            Which::Stackwalk => "frame count",
            Which::Upstream => "upstream frame count",
        };
        let n = ours.len().min(TOP);
        row.check(case.known, key, n == total, || {
            format!("we have {} frames, {} has {total}", ours.len(), r.source)
        });
    }
    if frames.richer > 0 {
        let mods = ours
            .iter()
            .take(TOP)
            .zip(&r.frames)
            .filter(|(o, w)| o.function.is_some() && w.function.is_none())
            .map(|(o, _)| describe_symbols(session, o))
            .collect::<Vec<_>>();
        row.notes.push(format!(
            "{} frame(s) named by us where {} has no function — ours is right: we have symbols it lacked ({})",
            frames.richer,
            r.source,
            dedup(mods).join(", ")
        ));
    }
    let mut whys: Vec<&str> = explained_scan.iter().map(|(w, _)| *w).collect();
    whys.dedup();
    for w in whys {
        let details: Vec<&str> = explained_scan
            .iter()
            .filter(|(x, _)| *x == w)
            .map(|(_, d)| d.as_str())
            .collect();
        row.notes.push(format!(
            "scan frames of {} differ — ours is right: {w} ({})",
            r.source,
            details.join("; ")
        ));
    }
    if !mismatched_scan.is_empty() {
        row.notes.push(format!(
            "scan frames of {} differ (heuristic, not a failure): {}",
            r.source,
            mismatched_scan.join("; ")
        ));
    }
    match which {
        Which::Stackwalk => {
            row.frames = frames;
            row.scan = scan;
        }
        Which::Upstream => {
            let t = &mut row.upstream_frames;
            t.matched += frames.matched;
            t.total += frames.total;
            t.richer += frames.richer;
            t.explained += frames.explained;
            add_source(&mut row.upstream_frames_source, &r.source);
        }
    }
}

fn dedup(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

/// `module: symbol file` for a frame, to say what we had that the reference did not.
fn describe_symbols(session: &Session, f: &Frame) -> String {
    let Some(m) = f.module_base.and_then(|b| session.module_at(b)) else {
        return "?".into();
    };
    let syms = session.module_symbols(m);
    let file = syms
        .symbol_file_path()
        .map(|p| file_name(&p.display().to_string()).to_string())
        .unwrap_or_else(|| "symbols".into());
    format!("{}: {file}", file_name(&m.name))
}

/// Compares one frame. `Ok(true)`: match, and we name a function the reference does not.
fn compare_frame(
    session: &Session,
    i: usize,
    got: Option<&Frame>,
    want: &RefFrame,
    delta: u64,
) -> Result<bool, String> {
    let Some(o) = got else {
        return Err(format!(
            "frame {i} missing: we stop before {}",
            show_ref(want)
        ));
    };
    let mut why = Vec::new();
    let addr_ok = if i == 0 {
        o.instruction == want.address
    } else {
        o.instruction == want.address || o.instruction == want.address.wrapping_add(delta)
    };
    if !addr_ok {
        why.push(format!(
            "address {:#x} vs {:#x}",
            o.instruction, want.address
        ));
    }
    let our_module = o
        .module_base
        .and_then(|b| session.module_at(b))
        .map(|m| file_name(&m.name).to_string());
    if let Some(wm) = &want.module {
        if !our_module
            .as_deref()
            .is_some_and(|m| m.eq_ignore_ascii_case(file_name(wm)))
        {
            why.push(format!("module {our_module:?} vs {wm:?}"));
        }
    }
    let mut richer = false;
    match (&o.function, &want.function) {
        (Some(a), Some(b)) if bare(a) != bare(b) => why.push(format!("function {a:?} vs {b:?}")),
        (None, Some(b)) => why.push(format!("no function where the reference has {b:?}")),
        (Some(_), None) => richer = true,
        _ => {}
    }
    if let Some(line) = want.line {
        if o.source_line != Some(line) {
            why.push(format!("line {:?} vs {line}", o.source_line));
        }
    }
    if why.is_empty() {
        Ok(richer)
    } else {
        Err(format!(
            "frame {i} {}: {}",
            show_ours(o, our_module.as_deref()),
            why.join(", ")
        ))
    }
}

fn show_ours(f: &Frame, module: Option<&str>) -> String {
    format!(
        "[ours {}!{} {:#x} {}]",
        module.unwrap_or("?"),
        f.function.as_deref().unwrap_or("?"),
        f.instruction,
        f.found_by.name()
    )
}

fn show_ref(f: &RefFrame) -> String {
    format!(
        "{}!{} {:#x}",
        f.module.as_deref().unwrap_or("?"),
        f.function.as_deref().unwrap_or("?"),
        f.address
    )
}

/// A function name without its parameter list (and `const`), for comparing names from
/// different symbol sources: `main(int, char**)` → `main`, `ns::f(int) const` → `ns::f`.
fn bare(name: &str) -> &str {
    let n = name.trim();
    let n = n.strip_suffix(" const").unwrap_or(n);
    if !n.ends_with(')') {
        return n;
    }
    let mut depth = 0i32;
    for (i, c) in n.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return n[..i].trim_end();
                }
            }
            _ => {}
        }
    }
    n
}

// ---------------------------------------------------------------------------------------------
// Shared results and the tests

struct Outcome {
    row: Row,
    /// A panic while running the case.
    panic: Option<String>,
}

fn results() -> &'static Vec<(Case, Outcome)> {
    static RESULTS: OnceLock<Vec<(Case, Outcome)>> = OnceLock::new();
    RESULTS.get_or_init(|| {
        let cases = cases();
        let outcomes: Vec<Outcome> = std::thread::scope(|s| {
            let handles: Vec<_> = cases
                .iter()
                .map(|case| {
                    s.spawn(
                        move || match catch_unwind(AssertUnwindSafe(|| run_case(case))) {
                            Ok(row) => Outcome { row, panic: None },
                            Err(p) => {
                                let msg = p
                                    .downcast_ref::<String>()
                                    .cloned()
                                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                                    .unwrap_or_else(|| "panic".into());
                                let row = Row {
                                    name: case.name.to_string(),
                                    ..Row::default()
                                };
                                Outcome {
                                    row,
                                    panic: Some(msg),
                                }
                            }
                        },
                    )
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("case thread"))
                .collect()
        });
        cases.into_iter().zip(outcomes).collect()
    })
}

/// Asserts that one case met every expectation (known differences aside).
fn assert_case(name: &str) {
    ntdbg_testutil::require_testdata!();
    let (case, out) = results()
        .iter()
        .find(|(c, _)| c.name == name)
        .unwrap_or_else(|| panic!("no case named {name:?}"));
    if let Some(p) = &out.panic {
        panic!("{}: panicked while analysing {}: {p}", case.name, case.dump);
    }
    assert!(
        out.row.failures.is_empty(),
        "{} ({}) differs from upstream:\n  {}\n(notes: {})",
        case.name,
        case.dump,
        out.row.failures.join("\n  "),
        out.row.notes.join("; ")
    );
}

macro_rules! case_tests {
    ($($test:ident => $name:expr;)*) => {
        $(
            #[test]
            fn $test() {
                assert_case($name);
            }
        )*
        const TESTED: &[&str] = &[$($name),*];
    };
}

case_tests! {
    symbolic_windows_mini => "symbolic windows/mini.dmp";
    symbolic_windows_mini_pdb => "symbolic windows/mini.dmp (crash.pdb only)";
    lldb_sigsegv => "lldb sigsegv.dmp";
    lldb_fizzbuzz_no_heap => "lldb fizzbuzz_no_heap.dmp";
    breakpad_minidump2 => "breakpad minidump2.dmp";
    breakpad_minidump_32bit_crash_addr => "breakpad minidump_32bit_crash_addr.dmp";
    breakpad_ascii_read_av => "breakpad ascii_read_av.dmp";
    breakpad_ascii_write_av => "breakpad ascii_write_av.dmp";
    breakpad_null_read_av => "breakpad null_read_av.dmp";
    breakpad_null_write_av => "breakpad null_write_av.dmp";
    breakpad_read_av_non_null => "breakpad read_av_non_null.dmp";
    breakpad_stack_exhaustion => "breakpad stack_exhaustion.dmp";
    breakpad_tiny_exe_fastfail => "breakpad tiny-exe-fastfail.dmp";
    breakpad_tiny_exe_with_cet_xsave => "breakpad tiny-exe-with-cet-xsave.dmp";
    rust_minidump_test => "rust-minidump test.dmp";
    rust_minidump_invalid_parameter => "rust-minidump invalid-parameter.dmp";
    firefox_windows_x86_64 => "firefox windows-x86_64.dmp";
    firefox_windows_aarch64 => "firefox windows-aarch64.dmp";
    winelab_x64_abort_aedebug => "winelab x64/abort.aedebug";
    winelab_x64_abort_dbgrun => "winelab x64/abort.dbgrun";
    winelab_x64_abort_inproc => "winelab x64/abort.inproc";
    winelab_x64_breakpoint_aedebug => "winelab x64/breakpoint.aedebug";
    winelab_x64_breakpoint_dbgrun => "winelab x64/breakpoint.dbgrun";
    winelab_x64_breakpoint_inproc => "winelab x64/breakpoint.inproc";
    winelab_x64_divzero_aedebug => "winelab x64/divzero.aedebug";
    winelab_x64_divzero_dbgrun => "winelab x64/divzero.dbgrun";
    winelab_x64_divzero_inproc => "winelab x64/divzero.inproc";
    winelab_x64_fastfail_dbgrun => "winelab x64/fastfail.dbgrun";
    winelab_x64_null_aedebug => "winelab x64/null.aedebug";
    winelab_x64_null_dbgrun => "winelab x64/null.dbgrun";
    winelab_x64_null_inproc => "winelab x64/null.inproc";
    winelab_x64_null_inproc_full => "winelab x64/null.inproc-full";
    winelab_x64_raise_aedebug => "winelab x64/raise.aedebug";
    winelab_x64_raise_dbgrun => "winelab x64/raise.dbgrun";
    winelab_x64_raise_inproc => "winelab x64/raise.inproc";
    winelab_x64_stack_dbgrun => "winelab x64/stack.dbgrun";
    winelab_x64_stack_inproc => "winelab x64/stack.inproc";
    winelab_x86_divzero_inproc => "winelab x86/divzero.inproc";
    winelab_x86_null_inproc => "winelab x86/null.inproc";
    winelab_x86_raise_inproc => "winelab x86/raise.inproc";
    winelab_x86_stack_inproc => "winelab x86/stack.inproc";
}

/// Every case has its own test, and every winelab dump in the corpus is a case.
#[test]
fn every_case_is_tested() {
    ntdbg_testutil::require_testdata!();
    let names: Vec<&str> = cases().iter().map(|c| c.name).collect();
    for n in &names {
        assert!(
            TESTED.contains(n),
            "case {n:?} has no #[test] in case_tests!"
        );
    }
    for n in TESTED {
        assert!(names.contains(n), "test for {n:?} has no case");
    }
    for arch in ["x64", "x86"] {
        let dir = testdata(&format!("winelab/{arch}"));
        for entry in std::fs::read_dir(&dir).expect("winelab dir") {
            let file = entry
                .expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            let Some(stem) = file
                .strip_suffix(".dmp")
                .or_else(|| file.strip_suffix(".dmp.xz"))
            else {
                continue;
            };
            assert!(
                WINELAB.contains(&(arch, stem)),
                "winelab/{arch}/{file} is in the corpus but not compared"
            );
        }
    }
}

/// Known differences must still apply: a fixed bug's entry has to go.
#[test]
fn known_differences_still_apply() {
    ntdbg_testutil::require_testdata!();
    let mut stale = Vec::new();
    for (case, out) in results() {
        if out.panic.is_some() {
            continue;
        }
        for k in case.known {
            if !out.row.known_used.contains(&k.key) {
                stale.push(format!(
                    "{}: {} ({:?}: {})",
                    case.name, k.key, k.kind, k.why
                ));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "known differences that no longer occur (remove them):\n  {}",
        stale.join("\n  ")
    );
}

/// The two deliberately corrupt rust-minidump dumps are rejected with an error, not a panic.
#[test]
fn corrupt_dumps_are_rejected() {
    ntdbg_testutil::require_testdata!();
    for rel in [
        "rust-minidump/testdata/invalid-range.dmp",
        "rust-minidump/testdata/invalid-record-count.dmp",
    ] {
        let path = testdata(rel);
        let result = catch_unwind(|| Session::open_dump(&path, Some("")).map(|_| ()));
        match result {
            Err(_) => panic!("{rel}: Session::open_dump panicked instead of returning an error"),
            Ok(Ok(())) => panic!("{rel}: a deliberately corrupt dump was accepted"),
            Ok(Err(e)) => {
                let msg = e.to_string();
                assert!(!msg.is_empty(), "{rel}: empty error message");
                println!("{rel}: rejected ({}): {msg}", e.code());
            }
        }
    }
}

/// Prints the comparison table and writes it to `target/upstream-comparison.md`.
#[test]
fn comparison_table() {
    ntdbg_testutil::require_testdata!();
    let table = render_table(results());
    println!("{table}");
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(Path::to_path_buf);
    if let Some(dir) = target {
        let _ = std::fs::write(dir.join("upstream-comparison.md"), &table);
    }
}

fn render_table(results: &[(Case, Outcome)]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| dump | exception ok | module/thread counts ok | top-5 frames matching minidump-stackwalk (non-scan) N/M | scan frames matching | upstream frames N/M | other threads: top-5 non-scan N/M, scan N/M | notes |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    let (mut frames_ok, mut frames_total, mut scan_ok, mut scan_total) = (0, 0, 0, 0);
    let (mut other_ok, mut other_total) = (0, 0);
    for (case, out) in results {
        let r = &out.row;
        let mut notes = r.notes.clone();
        if let Some(p) = &out.panic {
            notes.insert(0, format!("PANIC: {p}"));
        }
        notes.extend(r.failures.iter().map(|f| format!("FAIL {f}")));
        frames_ok += r.frames.matched;
        frames_total += r.frames.total;
        scan_ok += r.scan.matched;
        scan_total += r.scan.total;
        let upstream = if r.upstream_frames.total > 0 {
            format!(
                "{} ({})",
                r.upstream_frames.cell(),
                r.upstream_frames_source
            )
        } else {
            "–".into()
        };
        let others = if r.other_threads == 0 {
            "–".to_string()
        } else {
            format!(
                "{} thr: {}, scan {}",
                r.other_threads,
                r.other_frames.cell(),
                r.other_scan.cell()
            )
        };
        other_ok += r.other_frames.matched;
        other_total += r.other_frames.total;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            case.name,
            r.exception.cell(),
            r.counts.cell(),
            r.frames.cell(),
            r.scan.cell(),
            upstream,
            others,
            notes.join("<br>").replace('|', "\\|")
        );
    }
    let _ = writeln!(
        s,
        "\nTotals (crashing threads): non-scan top-5 frames {frames_ok}/{frames_total} matching; \
         scan frames {scan_ok}/{scan_total} matching. Other threads: non-scan top-5 frames \
         {other_ok}/{other_total} matching."
    );
    let _ = writeln!(
        s,
        "\n\"ok N/M\": facts checked (exception: code, address, access address, parameters, flags, \
         crash reason, thread id/index, faulting module, no-exception; counts: modules, threads, \
         thread ids), each from the strongest source that has it. Frames: module, function before \
         its parameter list, source line, address (callers: minidump-stackwalk's offset + 1, + 4 \
         on arm64). winelab rows: exception and counts from the facts file (parsed from the dump), \
         frames = minidump-stackwalk 0.27.0 on the CodeView-patched dump with crashy.sym; our \
         symbols: crashy.exe + crashy.pdb."
    );
    s
}
