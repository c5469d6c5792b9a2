//! Parameters and locals read from PDB symbol records: clang-cl/lld (`S_LOCAL` +
//! `S_DEFRANGE_*`) on the repository's `locals` samples, MSVC (`S_REGREL32`, `S_BPREL32`,
//! `S_REGISTER`, `S_FRAMEPROC`) on PDBs of the shared corpus.

use ntdbg_symbols::{
    FrameBase, Location, Machine, Procedure, RecordKind, Storage, Variable, VariableTable,
};
use std::collections::BTreeMap;

fn table(path: &std::path::Path) -> VariableTable {
    VariableTable::open(path).expect("PDB variables read")
}

fn procedure<'a>(t: &'a VariableTable, name: &str) -> &'a Procedure {
    t.procedures()
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no procedure {name}"))
}

/// `name:param|local` of every variable in the procedure, scope by scope.
fn declared(p: &Procedure) -> Vec<String> {
    p.scopes
        .iter()
        .flat_map(|s| s.variables.iter())
        .map(|v| {
            format!(
                "{}:{}",
                v.name,
                if v.is_parameter { "param" } else { "local" }
            )
        })
        .collect()
}

fn variable<'a>(p: &'a Procedure, name: &str) -> &'a Variable {
    p.scopes
        .iter()
        .flat_map(|s| s.variables.iter())
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no variable {name} in {}", p.name))
}

/// How many variables each record kind declares, for the report.
fn census(t: &VariableTable) -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    for p in t.procedures() {
        for v in p.scopes.iter().flat_map(|s| s.variables.iter()) {
            *out.entry(v.record.name()).or_default() += 1;
            if let Storage::Ranges(ranges) | Storage::HomeAndRanges { ranges, .. } = &v.storage {
                for r in ranges {
                    let kind = match r.location {
                        Location::Register(_) => "S_DEFRANGE_REGISTER",
                        Location::RegisterRelative { .. } => "S_DEFRANGE_REGISTER_REL",
                        Location::FrameRelative { .. } => "S_DEFRANGE_FRAMEPOINTER_REL",
                        Location::SubfieldRegister { .. } => "S_DEFRANGE_SUBFIELD_REGISTER",
                        // Registers a frame does not hold (x87, vector registers).
                        Location::Unsupported(_) => "unsupported",
                    };
                    *out.entry(kind).or_default() += 1;
                }
            }
            if let Storage::HomeAndRanges { .. } = &v.storage {
                *out.entry("S_DEFRANGE_FRAMEPOINTER_REL_FULL_SCOPE")
                    .or_default() += 1;
            }
        }
    }
    out
}

#[test]
fn clang_o2_registers_ranges_gaps_blocks_and_inline_sites() {
    let t = table(&ntdbg_testutil::sample("locals/x64-O2/locals.pdb"));
    assert_eq!(t.machine(), Machine::X64);

    let crash = procedure(&t, "crash_in_point");
    assert_eq!(
        declared(crash),
        ["p:param", "index:param", "scale:param", "product:local"]
    );
    // `scale` lives in r8d only over the first 4 bytes; `product` takes r8d after that.
    let Storage::Ranges(scale) = &variable(crash, "scale").storage else {
        panic!("scale has live ranges");
    };
    assert_eq!(scale.len(), 1);
    assert_eq!(scale[0].end - scale[0].start, 4);
    assert!(
        matches!(&scale[0].location, Location::Register(r) if r.name == "r8d" && r.full == "r8")
    );

    let walk = procedure(&t, "walk_points");
    assert_eq!(
        walk.local_base,
        FrameBase::Register(ntdbg_symbols::CvRegister::from_number(Machine::X64, 335).unwrap())
    );
    // The loop index sits in a nested block; clamp_add's a/b/r in its inline site.
    assert_eq!(
        declared(walk),
        [
            "pts:param",
            "count:param",
            "limit:param",
            "total:local",
            "i:local",
            "a:param",
            "b:param",
            "r:local"
        ]
    );
    let Storage::Ranges(total) = &variable(walk, "total").storage else {
        panic!("total has live ranges");
    };
    assert_eq!(total[0].gaps.len(), 1, "total's range has a gap");
    let (gap_start, gap_end) = total[0].gaps[0];
    assert_eq!((gap_start - total[0].start, gap_end - gap_start), (33, 10));
    assert!(!total[0].covers(gap_start));
    assert!(total[0].covers(gap_start - 1));
    // `i` is optimized away: declared, no location anywhere.
    assert_eq!(variable(walk, "i").storage, Storage::Ranges(Vec::new()));
    let inline = walk
        .scopes
        .iter()
        .find(|s| s.inline_site)
        .expect("inline site");
    assert!(!inline.ranges.is_empty());
    let inside = inline.ranges[0].0;
    let at = t.scope_at(inside).expect("scope at the inline site");
    assert_eq!(at.inlined.len(), 1);
    let names: Vec<&str> = at.inlined[0].iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "r"]);
    assert!(at
        .frame
        .iter()
        .all(|v| !["a", "b", "r"].contains(&v.name.as_str())));
}

#[test]
fn clang_o0_frame_relative() {
    let t = table(&ntdbg_testutil::sample("locals/x64-O0/locals.pdb"));
    let walk = procedure(&t, "walk_points");
    let Storage::Ranges(pts) = &variable(walk, "pts").storage else {
        panic!("pts has live ranges");
    };
    match &pts[0].location {
        Location::FrameRelative {
            base: FrameBase::Register(r),
            offset,
        } => assert_eq!((r.name, *offset), ("rsp", 48)),
        other => panic!("pts at {other:?}"),
    }
    let main = procedure(&t, "main");
    assert!(declared(main).contains(&"origin:local".to_string()));
}

#[test]
fn msvc_regrel32_parameters_by_the_procedure_type() {
    ntdbg_testutil::require_testdata!();
    let t = table(&ntdbg_testutil::testdata(
        "llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs/sigsegv.pdb",
    ));
    let foo = procedure(&t, "foo");
    let params: Vec<&str> = foo.scopes[0]
        .variables
        .iter()
        .filter(|v| v.is_parameter)
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(params, ["x", "y", "msg"]);
    match &variable(foo, "x").storage {
        Storage::WholeScope(Location::RegisterRelative { register, offset }) => {
            assert_eq!((register.name, *offset), ("rsp", 64))
        }
        other => panic!("x at {other:?}"),
    }
    assert_eq!(variable(foo, "x").record, RecordKind::RegRel32);
}

#[test]
fn record_kinds_seen_in_the_corpus() {
    ntdbg_testutil::require_testdata!();
    // Counts printed with --nocapture are the figures of the report; the asserts pin the
    // kinds each compiler's output exercises.
    let pdbs = [
        (
            "clang x64 -O2",
            ntdbg_testutil::sample("locals/x64-O2/locals.pdb"),
        ),
        (
            "clang x64 -O0",
            ntdbg_testutil::sample("locals/x64-O0/locals.pdb"),
        ),
        (
            "MSVC x86 crash.pdb",
            ntdbg_testutil::testdata(
                "getsentry-symbolic/symbolic-testutils/fixtures/windows/crash.pdb",
            ),
        ),
        (
            "MSVC x64 xcpt4.pdb",
            ntdbg_testutil::testdata("rizin-testbins/pe/microsoft_seh_tests/x64/xcpt4.pdb"),
        ),
        (
            "MSVC x86 xcpt4.pdb",
            ntdbg_testutil::testdata("rizin-testbins/pe/microsoft_seh_tests/x86/xcpt4.pdb"),
        ),
        (
            "MSVC ARM64 xcpt4.pdb",
            ntdbg_testutil::testdata("rizin-testbins/pe/microsoft_seh_tests/ARM64/xcpt4.pdb"),
        ),
        (
            "MSVC x64 sigsegv.pdb",
            ntdbg_testutil::testdata(
                "llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs/sigsegv.pdb",
            ),
        ),
    ];
    for (what, path) in pdbs {
        let t = table(&path);
        let counts = census(&t);
        println!("{what}: {} procedures, {counts:?}", t.procedures().len());
        assert!(!counts.is_empty(), "{what}: no variables read");
    }
    let x86 = census(&table(&ntdbg_testutil::testdata(
        "getsentry-symbolic/symbolic-testutils/fixtures/windows/crash.pdb",
    )));
    for kind in ["S_BPREL32", "S_REGREL32", "S_LOCAL", "S_DEFRANGE_REGISTER"] {
        assert!(x86.contains_key(kind), "MSVC x86: no {kind} in {x86:?}");
    }
    let arm64 = table(&ntdbg_testutil::testdata(
        "rizin-testbins/pe/microsoft_seh_tests/ARM64/xcpt4.pdb",
    ));
    assert_eq!(arm64.machine(), Machine::Arm64);
    assert!(census(&arm64).contains_key("S_DEFRANGE_REGISTER_REL"));
}
