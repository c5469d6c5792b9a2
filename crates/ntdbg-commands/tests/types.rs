//! `dt` layouts from real PDBs (insta snapshots in `tests/snapshots/types__*.snap`, the same
//! text the symbols crate rendered before `dt` moved here): lldb's `test-pdb-types.pdb`, the
//! winelab `crashy.pdb`, rizin's `minimal.pdb` (bit fields, unions) and Breakpad's
//! `dump_syms_regtest.pdb` (an x86 `_PEB`), with and without values; `-v`, `-a`, `-r` through
//! pointers, enum values and typedefs; and the type data behind them.

use ntdbg_commands::render::dt::{c_name, layout, type_name, value, DtOptions, ReadMemory};
use ntdbg_symbols::{SymbolType, TypeDb, TypeRecord};
use ntdbg_testutil::testdata;

fn open(rel: &str) -> TypeDb {
    TypeDb::open(&testdata(rel)).unwrap()
}

/// `dt MODULE!NAME [FIELD...]` with `-rN`, at `address` when given.
fn dt(
    db: &TypeDb,
    module: &str,
    name: &str,
    address: Option<(u64, ReadMemory<'_>)>,
    fields: &[&str],
    recursion: usize,
) -> Option<String> {
    let options = DtOptions {
        fields,
        recursion,
        ..DtOptions::default()
    };
    layout(db, module, name, address, &options)
}

#[test]
fn lldb_test_pdb_types() {
    ntdbg_testutil::require_testdata!();
    let db = open("llvm-lldb/unittests/SymbolFile/PDB/Inputs/test-pdb-types.pdb");
    let mut text = String::new();
    for t in [
        "Class",
        "Class::NestedClass",
        "NS::NSClass",
        "Enum",
        "ShortEnum",
    ] {
        text.push_str(&dt(&db, "test_pdb_types", t, None, &[], 0).unwrap());
    }
    insta::assert_snapshot!("lldb_test_pdb_types", text);
    // Lookups are case-insensitive, as WinDbg's; unknown types are `None`.
    assert!(db.contains("ns::nsclass"));
    assert!(dt(&db, "m", "NoSuchType", None, &[], 0).is_none());
    assert_eq!(
        db.find("*Class*"),
        ["Class", "Class::NestedClass", "NS::NSClass"]
    );
}

#[test]
fn crashy_x64_types() {
    ntdbg_testutil::require_testdata!();
    let db = open("winelab/x64/crashy.pdb");
    let mut text = String::new();
    for t in [
        "_EXCEPTION_RECORD",
        "_EXCEPTION_POINTERS",
        "CrashyError",
        "_MINIDUMP_TYPE",
        "_CONTEXT",
    ] {
        text.push_str(&dt(&db, "crashy", t, None, &[], 0).unwrap());
    }
    // -r1 expands embedded structures; FIELD filters.
    text.push_str(&dt(&db, "crashy", "_CONTEXT", None, &["Xmm1", "Rip", "Seg*"], 1).unwrap());
    insta::assert_snapshot!("crashy_x64_types", text);
    let fields = db.fields("_EXCEPTION_RECORD").unwrap();
    assert_eq!(fields[5].name, "ExceptionInformation");
    assert_eq!(fields[5].offset, 0x20);
    assert_eq!(type_name(&db, fields[5].ty), "[15] Uint8B");
}

#[test]
fn bitfields_unions_and_packed_structs() {
    ntdbg_testutil::require_testdata!();
    let db = open("rizin-testbins/pdb/minimal.pdb");
    let mut text = String::new();
    for t in db.find("*") {
        text.push_str(&dt(&db, "minimal", t, None, &[], 0).unwrap());
    }
    insta::assert_snapshot!("rizin_minimal", text);
    // -v: kinds, element counts and sizes (a union, bit fields, an anonymous member).
    let verbose = DtOptions {
        verbose: true,
        ..Default::default()
    };
    let mut text = String::new();
    for t in db.find("*") {
        text.push_str(&layout(&db, "minimal", t, None, &verbose).unwrap());
    }
    insta::assert_snapshot!("rizin_minimal_verbose", text);
    let bits = db.fields("bitfield_typedef").unwrap();
    assert_eq!(
        bits.iter()
            .map(|f| type_name(&db, f.ty))
            .collect::<Vec<_>>(),
        ["Pos 0, 1 Bit", "Pos 1, 2 Bits", "Pos 3, 3 Bits"]
    );
    // A union's members all start at 0.
    assert!(db
        .fields("union_typedef")
        .unwrap()
        .iter()
        .all(|f| f.offset == 0));
}

#[test]
fn x86_peb_with_values_and_holes() {
    ntdbg_testutil::require_testdata!();
    let db = open("google-breakpad/src/tools/windows/dump_syms/testdata/dump_syms_regtest.pdb");
    // A PEB at 0x7ffd_f000: bytes i → i (mod 256), with the page from +0x100 missing.
    let base = 0x7ffd_f000u64;
    let read = move |addr: u64, len: usize| -> Vec<Option<u8>> {
        (0..len as u64)
            .map(|i| {
                let off = (addr + i).wrapping_sub(base);
                (off < 0x100 || (0x200..0x1000).contains(&off)).then_some(off as u8)
            })
            .collect()
    };
    let mut text = dt(&db, "ntdll", "_PEB", None, &[], 0).unwrap();
    text.push_str(&dt(&db, "ntdll", "_PEB", Some((base, &read)), &[], 0).unwrap());
    text.push_str(
        &dt(
            &db,
            "ntdll",
            "_PEB",
            Some((base, &read)),
            &["FlsListHead", "BeingDebugged"],
            1,
        )
        .unwrap(),
    );
    insta::assert_snapshot!("x86_peb", text);
}

/// Memory for the `dt` option tests: `(address, bytes)` blocks; everything else is missing.
fn memory(blocks: Vec<(u64, Vec<u8>)>) -> impl Fn(u64, usize) -> Vec<Option<u8>> {
    move |addr: u64, len: usize| {
        (0..len as u64)
            .map(|i| {
                let a = addr + i;
                blocks.iter().find_map(|(base, bytes)| {
                    let off = usize::try_from(a.checked_sub(*base)?).ok()?;
                    bytes.get(off).copied()
                })
            })
            .collect()
    }
}

#[test]
fn verbose_arrays_pointers_enums_and_typedefs() {
    ntdbg_testutil::require_testdata!();
    use DtOptions;
    let db = open("google-breakpad/src/tools/windows/dump_syms/testdata/dump_syms_regtest.pdb");
    // An x86 PEB at 0x1000 whose Ldr points to a readable _PEB_LDR_DATA at 0x2000,
    // ProcessParameters to memory the dump lacks, FastPebLock NULL.
    let mut peb = vec![0u8; 0x250];
    peb[0x0c..0x10].copy_from_slice(&0x2000u32.to_le_bytes());
    peb[0x10..0x14].copy_from_slice(&0x9999_0000u32.to_le_bytes());
    peb[0x44..0x48].copy_from_slice(&7u32.to_le_bytes());
    peb[0x48..0x4c].copy_from_slice(&9u32.to_le_bytes());
    let mut ldr = vec![0u8; 0x30];
    ldr[0] = 0x28;
    let read = memory(vec![(0x1000, peb), (0x2000, ldr)]);
    let mut text = layout(
        &db,
        "ntdll",
        "_LIST_ENTRY",
        None,
        &DtOptions {
            verbose: true,
            ..DtOptions::default()
        },
    )
    .unwrap();
    let fields = ["Ldr", "ProcessParameters", "FastPebLock", "TlsBitmapBits"];
    for (recursion, array_elements) in [(0, Some(0)), (1, None)] {
        text.push_str(
            &layout(
                &db,
                "ntdll",
                "_PEB",
                Some((0x1000, &read)),
                &DtOptions {
                    fields: &fields,
                    recursion,
                    array_elements,
                    ..DtOptions::default()
                },
            )
            .unwrap(),
        );
    }
    text.push_str(
        &layout(
            &db,
            "ntdll",
            "_PEB",
            None,
            &DtOptions {
                fields: &[
                    "Ldr",
                    "TlsBitmapBits",
                    "ExecuteOptions",
                    "CriticalSectionTimeout",
                ],
                verbose: true,
                ..DtOptions::default()
            },
        )
        .unwrap(),
    );
    insta::assert_snapshot!("dt_options", text);
    assert!(text.contains("Memory read error 0x99990000"), "{text}");
    assert!(text.contains(" [01] 0x9"), "{text}");

    // An enum field's value with its name, as WinDbg shows it.
    let db = open("llvm-lldb/unittests/SymbolFile/PDB/Inputs/test-pdb-types.pdb");
    let read = memory(vec![(0x10, vec![2, 0])]);
    let class = dt(&db, "t", "Class", Some((0x10, &read)), &[], 0).unwrap();
    assert_eq!(
        class,
        "t!Class\n   +0x000 se               : 0n2 ( ESValue2 )\n"
    );
    // Typedefs (the PDB's S_UDT records): lldb's test states `ClassTypedef` names `Class`.
    assert!(db.contains("ClassTypedef"));
    assert_eq!(
        dt(&db, "t", "ClassTypedef", Some((0x10, &read)), &[], 0),
        Some(class)
    );
    let db = open("winelab/x64/crashy.pdb");
    assert_eq!(
        dt(&db, "crashy", "PEXCEPTION_POINTERS", None, &[], 0).unwrap(),
        "crashy!PEXCEPTION_POINTERS\nPtr64 _EXCEPTION_POINTERS\n"
    );
    assert_eq!(
        db.fields("EXCEPTION_RECORD").unwrap()[0].name,
        "ExceptionCode"
    );
}

#[test]
fn symbol_types_and_values_for_x() {
    ntdbg_testutil::require_testdata!();
    let db = open("winelab/x64/crashy.pdb");
    let Some(SymbolType::Data { ty }) = db.symbol_type("g_counter") else {
        panic!("g_counter is a variable");
    };
    assert_eq!(c_name(&db, ty), "long");
    let read = memory(vec![(0x5000, 5i32.to_le_bytes().to_vec())]);
    assert_eq!(value(&db, ty, 0x5000, &read), "0n5");
    assert_eq!(value(&db, ty, 0x9000, &read), "??");
    let Some(SymbolType::Function { returns }) = db.symbol_type("crash_null_write") else {
        panic!("crash_null_write is a function");
    };
    assert_eq!(returns.map(|r| c_name(&db, r)).as_deref(), Some("void"));
    assert_eq!(db.symbol_type("no_such_symbol"), None);
}

#[test]
fn type_data_behind_the_text() {
    ntdbg_testutil::require_testdata!();
    let db = open("winelab/x64/crashy.pdb");
    let record = db
        .lookup("_exception_record")
        .expect("case-insensitive lookup");
    assert!(matches!(
        db.record(record),
        Some(TypeRecord::Udt {
            kind: "struct",
            name: "_EXCEPTION_RECORD",
            size: 0x98
        })
    ));
    assert_eq!(db.size_of(record), Some(0x98));
    let members = db.members(record);
    assert_eq!(members.len(), 6);
    assert_eq!(db.size_of(members[5].ty), Some(15 * 8));
    let pointers = db.typedef("PEXCEPTION_POINTERS").expect("a typedef");
    assert!(matches!(
        db.strip(pointers).1,
        Some(TypeRecord::Pointer { size: 8, .. })
    ));
}
