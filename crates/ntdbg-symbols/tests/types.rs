//! `dt` layouts from real PDBs (insta snapshots in `tests/snapshots/`): lldb's
//! `test-pdb-types.pdb`, the winelab `crashy.pdb`, rizin's `minimal.pdb` (bit fields, unions)
//! and Breakpad's `dump_syms_regtest.pdb` (an x86 `_PEB`), with and without values.

mod common;

use common::testdata;
use ntdbg_symbols::TypeDb;

fn open(rel: &str) -> TypeDb {
    TypeDb::open(&testdata(rel)).unwrap()
}

#[test]
fn lldb_test_pdb_types() {
    let db = open("llvm-lldb/unittests/SymbolFile/PDB/Inputs/test-pdb-types.pdb");
    let mut text = String::new();
    for t in [
        "Class",
        "Class::NestedClass",
        "NS::NSClass",
        "Enum",
        "ShortEnum",
    ] {
        text.push_str(&db.layout("test_pdb_types", t, None, &[], 0).unwrap());
    }
    insta::assert_snapshot!("lldb_test_pdb_types", text);
    // Lookups are case-insensitive, as WinDbg's; unknown types are `None`.
    assert!(db.contains("ns::nsclass"));
    assert!(db.layout("m", "NoSuchType", None, &[], 0).is_none());
    assert_eq!(
        db.find("*Class*"),
        ["Class", "Class::NestedClass", "NS::NSClass"]
    );
}

#[test]
fn crashy_x64_types() {
    let db = open("winelab/x64/crashy.pdb");
    let mut text = String::new();
    for t in [
        "_EXCEPTION_RECORD",
        "_EXCEPTION_POINTERS",
        "CrashyError",
        "_MINIDUMP_TYPE",
        "_CONTEXT",
    ] {
        text.push_str(&db.layout("crashy", t, None, &[], 0).unwrap());
    }
    // -r1 expands embedded structures; FIELD filters.
    text.push_str(
        &db.layout("crashy", "_CONTEXT", None, &["Xmm1", "Rip", "Seg*"], 1)
            .unwrap(),
    );
    insta::assert_snapshot!("crashy_x64_types", text);
    let fields = db.fields("_EXCEPTION_RECORD").unwrap();
    assert_eq!(fields[5].name, "ExceptionInformation");
    assert_eq!(fields[5].offset, 0x20);
    assert_eq!(fields[5].type_name, "[15] Uint8B");
}

#[test]
fn bitfields_unions_and_packed_structs() {
    let db = open("rizin-testbins/pdb/minimal.pdb");
    let mut text = String::new();
    for t in db.find("*") {
        text.push_str(&db.layout("minimal", t, None, &[], 0).unwrap());
    }
    insta::assert_snapshot!("rizin_minimal", text);
    let bits = db.fields("bitfield_typedef").unwrap();
    assert_eq!(
        bits.iter()
            .map(|f| f.type_name.as_str())
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
    let mut text = db.layout("ntdll", "_PEB", None, &[], 0).unwrap();
    text.push_str(
        &db.layout("ntdll", "_PEB", Some((base, &read)), &[], 0)
            .unwrap(),
    );
    text.push_str(
        &db.layout(
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
