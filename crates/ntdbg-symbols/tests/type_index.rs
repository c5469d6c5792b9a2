//! Types by TPI index (`TypeDb::kind`, `cpp_name`, members, enumerators, pointers), on the
//! repository's clang-built sample PDB and on MSVC PDBs, checked against `llvm-pdbutil dump
//! -types -globals` of the same files.

use ntdbg_symbols::{primitive_named, TypeDb, TypeKind};
use ntdbg_testutil::testdata;

fn crashy() -> TypeDb {
    TypeDb::open(&ntdbg_testutil::repo_root().join("testdata/crashy.pdb")).unwrap()
}

#[test]
fn globals_have_their_types() {
    let db = crashy();
    // `volatile int g_sink`: the modifier is looked through.
    let sink = db.data_type("g_sink").unwrap();
    assert_eq!(db.cpp_name(sink), "int");
    assert!(matches!(db.kind(sink), TypeKind::Base(b) if b.size == 4 && b.signed && !b.character));
    assert_eq!(db.cpp_name(db.data_type("g_null_ptr").unwrap()), "int *");
    assert_eq!(db.cpp_name(db.data_type("g_dump_path").unwrap()), "char *");
    assert_eq!(db.cpp_name(db.data_type("g_frame").unwrap()), "char *");
    assert_eq!(
        db.cpp_name(db.data_type("g_fault_context").unwrap()),
        "struct _CONTEXT"
    );
    assert_eq!(
        db.cpp_name(db.data_type("g_fault_thread_id").unwrap()),
        "unsigned long"
    );
    assert_eq!(
        db.cpp_name(db.data_type("g_overflow_event").unwrap()),
        "void *"
    );
    // `static const struct mode modes[6]`.
    let modes = db.data_type("modes").unwrap();
    assert_eq!(db.cpp_name(modes), "struct mode [6]");
    assert!(matches!(
        db.kind(modes),
        TypeKind::Array {
            count: 6,
            size: 96,
            ..
        }
    ));
    // Functions are not data.
    assert_eq!(db.data_type("main"), None);
    assert_eq!(db.data_type("no_such_global"), None);
}

#[test]
fn records_members_and_pointers() {
    let db = crashy();
    let context = db.named_type("_CONTEXT").unwrap();
    assert!(matches!(
        db.kind(context),
        TypeKind::Record {
            kind: "struct",
            size: 0x4d0,
            ..
        }
    ));
    assert_eq!(db.type_size(context), Some(0x4d0));
    let rip = db.find_member(context, "Rip").unwrap();
    assert_eq!(rip.offset, 0xf8);
    assert_eq!(db.cpp_name(rip.type_index), "unsigned int64");
    // C++ member names are case-sensitive.
    assert_eq!(db.find_member(context, "rip"), None);

    let mode = db.named_type("mode").unwrap();
    let run = db.find_member(mode, "run").unwrap();
    assert_eq!(run.offset, 8);
    assert_eq!(db.cpp_name(run.type_index), "<function> *");
    let name = db.find_member(mode, "name").unwrap();
    assert_eq!(db.cpp_name(name.type_index), "char *");
    assert_eq!(
        db.record_members(mode)
            .iter()
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>(),
        ["name", "run"]
    );

    // A pointer record exists for the structure, and every primitive has a pointer index.
    let record = db.named_type("_EXCEPTION_RECORD").unwrap();
    let pointer = db.pointer_to(record).unwrap();
    assert_eq!(db.cpp_name(pointer), "struct _EXCEPTION_RECORD *");
    match db.kind(pointer) {
        TypeKind::Pointer { pointee, size: 8 } => {
            assert!(matches!(
                db.kind(pointee),
                TypeKind::Record { size: 0x98, .. }
            ))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(db.pointer_to(0x74), Some(0x674));
    assert_eq!(db.cpp_name(0x674), "int *");
    assert!(matches!(
        db.kind(0x674),
        TypeKind::Pointer {
            pointee: 0x74,
            size: 8
        }
    ));
}

#[test]
fn primitives_by_c_name() {
    let db = crashy();
    for (name, spelled, size, signed) in [
        ("int", "int", 4, true),
        ("unsigned int", "unsigned int", 4, false),
        ("unsigned   __int64", "unsigned int64", 8, false),
        ("long long", "int64", 8, true),
        ("char", "char", 1, true),
        ("unsigned char", "unsigned char", 1, false),
        ("wchar_t", "wchar_t", 2, false),
        ("short", "short", 2, true),
        ("bool", "bool", 1, false),
    ] {
        let index = primitive_named(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(db.cpp_name(index), spelled, "{name}");
        match db.kind(index) {
            TypeKind::Base(b) => {
                assert_eq!((b.size, b.signed), (size, signed), "{name}");
                assert_eq!(b.boolean, name == "bool");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    assert_eq!(primitive_named("Node"), None);
    assert!(matches!(db.kind(0x0003), TypeKind::Base(b) if b.size == 0));
    assert_eq!(db.kind(0x7fff_ffff), TypeKind::Unknown);
}

#[test]
fn msvc_enums_functions_and_x86_pointers() {
    ntdbg_testutil::require_testdata!();
    let db = TypeDb::open(&testdata(
        "getsentry-symbolic/symbolic-testutils/fixtures/windows/crash.pdb",
    ))
    .unwrap();
    assert_eq!(db.pointer_size(), 4);
    let state = db.data_type("__scrt_current_native_startup_state").unwrap();
    assert_eq!(db.cpp_name(state), "__scrt_native_startup_state");
    match db.kind(state) {
        TypeKind::Enum { size: 4, name, .. } => assert_eq!(name, "__scrt_native_startup_state"),
        other => panic!("{other:?}"),
    }
    assert_eq!(db.enumerator_name(state, 2).as_deref(), Some("initialized"));
    assert_eq!(db.enumerator_name(state, 7), None);
    // `int (*pre_c_initializer)()` on x86: a 4-byte pointer to a function.
    let init = db.data_type("pre_c_initializer").unwrap();
    assert_eq!(db.cpp_name(init), "<function> *");
    assert!(matches!(db.kind(init), TypeKind::Pointer { size: 4, .. }));
    assert_eq!(db.pointer_to(0x74), Some(0x474));

    let db = TypeDb::open(&testdata(
        "llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs/sigsegv.pdb",
    ))
    .unwrap();
    assert_eq!(db.pointer_size(), 8);
    assert_eq!(db.cpp_name(0x1004), "char *");
    assert!(matches!(
        db.kind(0x100a),
        TypeKind::Function {
            returns: Some(0x74)
        }
    ));
    assert_eq!(db.cpp_name(0x100a), "<function>");
}
