//! Classification, signatures and bucketing against the shared corpus: every winelab crash
//! mode classified, the same mode bucketed together across dump methods, breakpad's
//! exploitability set classified as upstream rates it; `list_dumps` and `triage_dumps`.

use ntdbg_analysis::listing::list_dumps;
use ntdbg_analysis::triage::{render_html, triage_paths, TriageOptions};
use ntdbg_analysis::{analyze, Report};
use ntdbg_engine::Session;
use ntdbg_targets::listing::WalkLimits;
use ntdbg_testutil::testdata;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn report(rel: &str) -> Report {
    let path = testdata(rel);
    let session = Session::open_dump(&path, None).unwrap_or_else(|e| panic!("{rel}: {e}"));
    session.symbols().set_offline(true);
    analyze(&session)
}

fn inferences(r: &Report) -> String {
    r.inferences
        .iter()
        .map(|i| format!("{} [{}]", i.text, i.basis))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `(dump, signature prefix, words every inference text together must contain)`.
const WINELAB: &[(&str, &str, &[&str])] = &[
    (
        "x64/null.inproc.dmp",
        "AV_WRITE_NULL crashy!crash_null_write",
        &[
            "null pointer dereference",
            "mov dword ptr [rcx],1234h with rcx=0",
        ],
    ),
    (
        "x86/null.inproc.dmp",
        "AV_WRITE_NULL crashy!crash_null_write",
        &["null pointer dereference", "[ecx]", "ecx=0"],
    ),
    (
        "x64/divzero.inproc.dmp",
        "DIVIDE_BY_ZERO crashy!divide",
        &["division by zero"],
    ),
    (
        "x64/abort.inproc.dmp",
        // Wine's kernelbase has no unwind data and its caller's code (msvcrt) is not in the
        // dump: that frame cannot be checked, so the signature stops at the context frame.
        "ABORT kernelbase+0x13d7e",
        &["abort() was called"],
    ),
    (
        "x64/breakpoint.inproc.dmp",
        "BREAKPOINT crashy!mode_breakpoint",
        &[
            "a deliberate breakpoint: crashy!mode_breakpoint",
            "called __debugbreak",
        ],
    ),
    (
        "x64/raise.inproc.dmp",
        "0xE0001234 crashy!main",
        &["RaiseException"],
    ),
    (
        "x64/stack.inproc.dmp",
        "STACK_OVERFLOW crashy!recurse",
        &[
            "unbounded recursion: crashy!recurse repeats",
            "collapsed: crashy!recurse x",
        ],
    ),
    (
        "x64/fastfail.dbgrun.dmp",
        "FAST_FAIL_7 crashy!mode_fastfail",
        &["__fastfail"],
    ),
];

#[test]
fn winelab_modes_are_classified() {
    ntdbg_testutil::require_testdata!();
    for (dump, signature, words) in WINELAB {
        let r = report(&format!("winelab/{dump}"));
        assert!(
            r.signature.starts_with(signature),
            "{dump}: signature {:?}",
            r.signature
        );
        let text = inferences(&r);
        for w in *words {
            assert!(text.contains(w), "{dump}: {w:?} not in\n{text}");
        }
    }
}

fn winelab_dumps() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for arch in ["x64", "x86"] {
        let dir = testdata(&format!("winelab/{arch}"));
        for e in std::fs::read_dir(&dir).expect("winelab folder").flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "dmp") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn same_mode_one_bucket_different_modes_apart() {
    ntdbg_testutil::require_testdata!();
    let files: Vec<PathBuf> = winelab_dumps()
        .into_iter()
        .filter(|p| p.parent().is_some_and(|d| d.ends_with("x64")))
        .collect();
    let options = TriageOptions {
        offline: true,
        jobs: 2,
        ..Default::default()
    };
    let result = triage_paths(&files, &options, &|_, _| {});
    assert!(result.failed.is_empty(), "{:?}", result.failed);
    // mode -> the signatures its dumps landed in.
    let mut by_mode: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for b in &result.buckets {
        for d in &b.dumps {
            let name = PathBuf::from(d);
            let file = name.file_name().unwrap_or_default().to_string_lossy();
            let mode = file.split('.').next().unwrap_or_default().to_string();
            by_mode.entry(mode).or_default().push(b.signature.clone());
        }
    }
    assert_eq!(by_mode.len(), 7, "{by_mode:#?}");
    let mut seen = Vec::new();
    for (mode, sigs) in &by_mode {
        let first = &sigs[0];
        assert!(sigs.iter().all(|s| s == first), "{mode}: {sigs:?}");
        assert!(
            !seen.contains(first),
            "{mode} shares {first} with another mode"
        );
        seen.push(first.clone());
    }
    // Buckets are sorted by count, each has its dumps and a representative.
    assert!(result.buckets.windows(2).all(|w| w[0].count >= w[1].count));
    for b in &result.buckets {
        assert_eq!(b.count, b.dumps.len());
        assert_eq!(b.representative.signature, b.signature);
        assert!(b.first_seen.is_some() && b.first_seen <= b.last_seen);
        assert!(b
            .modules
            .iter()
            .any(|m| m.contains(".dll") || m.contains(".exe")));
    }
    let json = serde_json::to_value(&result).expect("json");
    for key in ["dumps", "buckets", "failed"] {
        assert!(json.get(key).is_some(), "{key}");
    }
    for key in [
        "signature",
        "count",
        "kind",
        "first_seen",
        "last_seen",
        "modules",
        "dumps",
        "representative",
    ] {
        assert!(json["buckets"][0].get(key).is_some(), "{key}");
    }
}

#[test]
fn breakpad_exploitability_set() {
    ntdbg_testutil::require_testdata!();
    let base = "google-breakpad/src/processor/testdata";
    // Breakpad rates HIGH an ASCII address, NONE a null read/write and stack exhaustion, LOW a
    // non-null read. Its crashme.exe loads each address as an immediate (`mov eax,41414141h`)
    // right before the access: a constant of the code, whatever its bytes, which the report
    // says instead of rating it exploitable.
    let cases: &[(&str, &str, &[&str], bool)] = &[
        (
            "ascii_read_av.dmp",
            "AV_READ ",
            &["constant address 0x41414141", "`mov eax,41414141h`"],
            true,
        ),
        (
            "ascii_write_av.dmp",
            "AV_WRITE ",
            &["constant address 0x41414141"],
            true,
        ),
        (
            "null_read_av.dmp",
            "AV_READ_NULL ",
            &["null pointer dereference", "eax=0"],
            false,
        ),
        (
            "null_write_av.dmp",
            "AV_WRITE_NULL ",
            &["null pointer dereference"],
            false,
        ),
        (
            "stack_exhaustion.dmp",
            "STACK_OVERFLOW ",
            &["unbounded recursion"],
            false,
        ),
        (
            "read_av_non_null.dmp",
            "AV_READ ",
            &["constant address 0x4e3c9", "`mov eax,4E3C9h`"],
            false,
        ),
    ];
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(testdata("google-breakpad/EXPECTED.json")).expect("EXPECTED"),
    )
    .expect("json");
    for (dump, tag, words, exploitable) in cases {
        let rating = expected[format!("src/processor/testdata/{dump}")]["exploitability"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(
            rating == "EXPLOITABILITY_HIGH",
            *exploitable,
            "{dump}: {rating}"
        );
        let r = report(&format!("{base}/{dump}"));
        assert!(r.signature.starts_with(tag), "{dump}: {}", r.signature);
        let text = inferences(&r);
        for w in *words {
            assert!(text.contains(w), "{dump}: {w:?} not in\n{text}");
        }
        assert!(!text.contains("exploitable"), "{dump}: {text}");
    }
}

#[test]
fn near_null_and_constant_addresses() {
    ntdbg_testutil::require_testdata!();
    let r = report("google-breakpad/src/processor/testdata/minidump2.dmp");
    assert!(inferences(&r).contains(
        "write at 0x45, inside the never-mapped NULL page: a NULL or near-NULL pointer plus an offset"
    ));
    // symbolic mini.dmp: `mov dword ptr ds:[45h],5`, no base register.
    let r = report("getsentry-symbolic/symbolic-testutils/fixtures/windows/mini.dmp");
    assert!(
        inferences(&r).contains("constant address 0x45"),
        "{}",
        inferences(&r)
    );
    let r = report("rust-minidump/testdata/invalid-parameter.dmp");
    assert!(
        r.signature.starts_with("INVALID_PARAMETER "),
        "{}",
        r.signature
    );
}

#[test]
fn list_dumps_reads_headers() {
    ntdbg_testutil::require_testdata!();
    let rows = list_dumps(&testdata(""), &WalkLimits::SHELL)
        .expect("list")
        .dumps;
    let find = |suffix: &str| {
        rows.iter()
            .find(|r| r.path.replace('\\', "/").ends_with(suffix))
            .unwrap_or_else(|| panic!("{suffix} not listed"))
    };
    let null = find("winelab/x64/null.inproc.dmp");
    assert_eq!(null.kind.as_deref(), Some("user"));
    assert_eq!(null.arch.as_deref(), Some("x64"));
    assert_eq!(null.os_build.as_deref(), Some("10.0.18362"));
    assert_eq!(null.process.as_deref(), Some("crashy.exe"));
    let h = null.event.as_ref().expect("event");
    assert_eq!(h.code.as_deref(), Some("0xc0000005"));
    assert_eq!(h.description, "write to 0x0000000000000000");
    let kernel = find("rizin-testbins/dmp/triage_x64.dmp");
    assert_eq!(kernel.kind.as_deref(), Some("kernel-small"));
    let h = kernel.event.as_ref().expect("bugcheck");
    assert_eq!(h.kind, "bugcheck");
    assert_eq!(h.code.as_deref(), Some("0x1000007e"));
    assert_eq!(h.parameters.len(), 4);
    for bad in [
        "rust-minidump/testdata/invalid-range.dmp",
        "rust-minidump/testdata/invalid-record-count.dmp",
        "winelab/x64/null.inproc-full.dmp.xz",
    ] {
        assert!(find(bad).error.is_some(), "{bad} should be unreadable");
    }
    // PDBs and executables are not dumps.
    assert!(!rows
        .iter()
        .any(|r| r.path.ends_with(".pdb") || r.path.ends_with(".exe")));
}

#[test]
fn html_report_is_well_formed_and_has_the_buckets() {
    ntdbg_testutil::require_testdata!();
    let files = winelab_dumps();
    let options = TriageOptions {
        offline: true,
        ..Default::default()
    };
    let result = triage_paths(&files, &options, &|_, _| {});
    let html = render_html(&result, "winelab <&>");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("winelab &lt;&amp;&gt;"));
    for b in &result.buckets {
        let sig = b.signature.replace('&', "&amp;").replace('<', "&lt;");
        assert!(html.contains(&sig), "{sig}");
    }
    // Balanced elements.
    for tag in [
        "html", "head", "body", "main", "section", "div", "table", "tr", "td", "ul", "li",
    ] {
        let open =
            html.matches(&format!("<{tag}>")).count() + html.matches(&format!("<{tag} ")).count();
        let close = html.matches(&format!("</{tag}>")).count();
        assert_eq!(open, close, "<{tag}> opened {open}, closed {close}");
    }
    assert!(
        html.contains("<h3>Signature frames</h3>"),
        "how each signature was built"
    );
    assert!(!html.contains("<script"), "self-contained, no scripts");
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no network"
    );
}
