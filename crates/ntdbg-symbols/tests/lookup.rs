//! Finding, verifying and loading module symbols from real files, and address/name lookups.

use crate::common;

use common::*;
use ntdbg_symbols::{SymbolPath, SymbolStatus, SymbolStore};

fn store_for(dirs: &[&str]) -> SymbolStore {
    SymbolStore::new(SymbolPath::parse(&dirs.join(";")).unwrap())
}

fn tried_text(m: &ntdbg_symbols::ModuleSymbols) -> String {
    m.tried().join("\n")
}

/// Frames of winelab/facts/x64/null.inproc.json: (rva, function, line).
const CRASHY_X64_FRAMES: [(u64, &str, u32); 3] = [
    (0x2134, "crash_null_write(int*)", 119),
    (0x1b65, "mode_null()", 120),
    (0x18f8, "main(int, char**)", 249),
];

fn check_crashy_x64(m: &ntdbg_symbols::ModuleSymbols) {
    for (rva, name, line) in CRASHY_X64_FRAMES {
        let hit = m
            .lookup(rva)
            .unwrap_or_else(|| panic!("no symbol at {rva:#x}"));
        assert_eq!(hit.name, name, "at {rva:#x}");
        assert_eq!(hit.line, Some(line), "at {rva:#x}");
        assert!(
            hit.file.as_deref().unwrap_or("").ends_with("crashy.c"),
            "{hit:?}"
        );
        assert!(!hit.is_public);
    }
    let hit = m.lookup(0x2134).unwrap();
    assert_eq!((hit.start_rva, hit.size), (0x2130, Some(0xc)));
    assert_eq!(m.function_range(0x2134), Some((0x2130, 0x213c)));
}

#[test]
fn pdb_in_store_layout() {
    ntdbg_testutil::require_testdata!();
    let s = Scratch::new("store");
    let pdb = s.put(
        &testdata("winelab/x64/crashy.pdb"),
        &format!("crashy.pdb/{CRASHY_X64_ID}/crashy.pdb"),
    );
    let store = store_for(&[&s.path_text()]);
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{}", tried_text(&m));
    assert_eq!(m.symbol_file_path(), Some(pdb.as_path()));
    assert_eq!(
        m.pdb_identity(),
        Some(("crashy.pdb".to_string(), CRASHY_X64_ID.to_string()))
    );
    check_crashy_x64(&m);
    // Cached by module: the same Arc comes back.
    let again = store.module(&crashy_x64_module(), &no_memory);
    assert!(std::sync::Arc::ptr_eq(&m, &again));
    assert!(store.loaded(CRASHY_X64_BASE).is_some());
}

#[test]
fn pdb_in_plain_layout_matched_case_insensitively() {
    ntdbg_testutil::require_testdata!();
    let s = Scratch::new("plain");
    s.put(&testdata("winelab/x64/crashy.pdb"), "CRASHY.PDB");
    let store = store_for(&[&s.path_text()]);
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{}", tried_text(&m));
    assert!(m.symbol_file_path().unwrap().ends_with("CRASHY.PDB"));
    // The store-layout candidate was tried first and reported missing.
    let store_path = format!("crashy.pdb/{CRASHY_X64_ID}/crashy.pdb: not found");
    assert!(
        m.tried().iter().any(|t| t.ends_with(&store_path)),
        "{}",
        tried_text(&m)
    );
    check_crashy_x64(&m);
}

#[test]
fn guid_mismatch_is_rejected() {
    ntdbg_testutil::require_testdata!();
    let s = Scratch::new("mismatch");
    // The x86 build's PDB under the x64 build's name and key.
    s.put(
        &testdata("winelab/x86/crashy.pdb"),
        &format!("crashy.pdb/{CRASHY_X64_ID}/crashy.pdb"),
    );
    let store = store_for(&[&s.path_text()]);
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::NoSymbols);
    let tried = tried_text(&m);
    assert!(tried.contains("GUID/age mismatch"), "{tried}");
    assert!(tried.contains(&format!("want {CRASHY_X64_ID}")), "{tried}");
    assert!(m.lookup(0x2134).is_none());
}

#[test]
fn wine_module_without_codeview_goes_through_the_image() {
    ntdbg_testutil::require_testdata!();
    let dir = testdata("winelab/x64");
    let store = store_for(&[dir.to_str().unwrap()]);
    let m = store.module(&crashy_x64_wine_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{}", tried_text(&m));
    assert_eq!(m.image_path(), Some(dir.join("crashy.exe").as_path()));
    assert_eq!(
        m.pdb_identity(),
        Some(("crashy.pdb".to_string(), CRASHY_X64_ID.to_string()))
    );
    assert!(
        tried_text(&m).contains("no CodeView record in the dump; the image names crashy.pdb"),
        "{}",
        tried_text(&m)
    );
    assert_eq!(
        m.image_info().map(|i| i.image_key()).as_deref(),
        Some("6B0CCCD25c000")
    );
    check_crashy_x64(&m);
}

#[test]
fn wine_x86_module() {
    ntdbg_testutil::require_testdata!();
    let dir = testdata("winelab/x86");
    let store = store_for(&[dir.to_str().unwrap()]);
    let exe = std::fs::read(dir.join("crashy.exe")).unwrap();
    let pe = ntdbg_formats::pe::PeInfo::parse(&exe, ntdbg_formats::pe::PeLayout::File).unwrap();
    let mut module =
        minidump::MinidumpModule::new(0x40_0000, pe.size_of_image, r"Z:\tmp\crashy.exe");
    module.raw.time_date_stamp = pe.time_date_stamp;
    let m = store.module(&module, &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{}", tried_text(&m));
    // winelab/facts/x86/null.inproc.json
    for (rva, name, line) in [
        (0x1ef3, "crash_null_write(int*)", 119),
        (0x1a5d, "mode_null()", 120),
        (0x185c, "main(int, char**)", 249),
    ] {
        let hit = m.lookup(rva).unwrap();
        assert_eq!(
            (hit.name.as_str(), hit.line),
            (name, Some(line)),
            "at {rva:#x}"
        );
    }
}

#[test]
fn image_with_wrong_timestamp_is_rejected() {
    ntdbg_testutil::require_testdata!();
    let dir = testdata("winelab/x64");
    let store = store_for(&[dir.to_str().unwrap()]);
    let mut module = crashy_x64_wine_module();
    module.raw.time_date_stamp = 0x1234_5678;
    let m = store.module(&module, &no_memory);
    assert_eq!(m.status(), SymbolStatus::NoSymbols);
    let tried = tried_text(&m);
    assert!(
        tried.contains(
            "crashy.exe: timestamp/size mismatch (want 123456785c000, file has 6B0CCCD25c000)"
        ),
        "{tried}"
    );
    assert!(tried.contains("the PDB cannot be identified"), "{tried}");
}

#[test]
fn corrupt_pdbs_become_no_symbols_with_a_reason() {
    ntdbg_testutil::require_testdata!();
    let s = Scratch::new("corrupt");
    s.write(
        "garbage/crashy.pdb",
        b"this is not a PDB file at all, just some text\n",
    );
    let real = std::fs::read(testdata("winelab/x64/crashy.pdb")).unwrap();
    s.write("truncated/crashy.pdb", &real[..real.len() / 3]);
    for dir in ["garbage", "truncated"] {
        let store = store_for(&[s.0.join(dir).to_str().unwrap()]);
        let m = store.module(&crashy_x64_module(), &no_memory);
        assert_eq!(m.status(), SymbolStatus::NoSymbols, "{dir}");
        let tried = tried_text(&m);
        assert!(tried.contains("not a readable PDB"), "{dir}: {tried}");
    }
}

#[test]
fn damaged_pdbs_never_panic_the_loader() {
    ntdbg_testutil::require_testdata!();
    let s = Scratch::new("damaged");
    let real = std::fs::read(testdata("winelab/x64/crashy.pdb")).unwrap();
    let mut state = 0x9e37_79b9_u32;
    for round in 0..12 {
        let mut bytes = real.clone();
        for _ in 0..64 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let at = state as usize % bytes.len();
            bytes[at] = (state >> 24) as u8;
        }
        let dir = format!("r{round}");
        s.write(&format!("{dir}/crashy.pdb"), &bytes);
        let store = store_for(&[s.0.join(&dir).to_str().unwrap()]);
        let m = store.module(&crashy_x64_module(), &no_memory);
        // Whatever survives must answer queries without panicking.
        let _ = m.lookup(0x2134);
        let _ = m.find("*");
        assert!(!m.tried().is_empty());
    }
}

#[test]
fn find_and_resolve() {
    ntdbg_testutil::require_testdata!();
    let dir = testdata("winelab/x64");
    let store = store_for(&[dir.to_str().unwrap()]);
    let m = store.module(&crashy_x64_wine_module(), &no_memory);
    let found = m.find("crash_*");
    assert!(found
        .iter()
        .any(|e| e.name == "crash_null_write(int*)" && e.rva == 0x2130 && e.is_function));
    assert!(found.windows(2).all(|w| w[0].rva <= w[1].rva));
    assert_eq!(m.find("CRASH_NULL_WRITE").len(), 1);
    assert_eq!(m.find("mode_?ull").len(), 1);
    assert_eq!(m.resolve("crash_null_write"), Some(0x2130));
    assert_eq!(m.resolve("Crash_Null_Write(int*)"), Some(0x2130));
    assert_eq!(m.resolve("main"), Some(0x1520));
    assert_eq!(m.resolve("no_such_symbol"), None);
    assert!(m.find("*").len() > 20);
}

#[test]
fn breakpad_sym_in_store_layout() {
    ntdbg_testutil::require_testdata!();
    // breakpad's processor test symbols: test_app.pdb/<id>/test_app.sym
    let root = testdata("google-breakpad/src/processor/testdata/symbols");
    let id_dir = std::fs::read_dir(root.join("test_app.pdb"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let id = id_dir.file_name().into_string().unwrap();
    let module = module_with_codeview(0x400000, 0x2d000, r"c:\test_app.exe", "test_app.pdb", &id);
    let store = store_for(&[root.to_str().unwrap()]);
    let m = store.module(&module, &no_memory);
    assert_eq!(m.status(), SymbolStatus::Breakpad, "{}", tried_text(&m));
    assert!(m.symbol_file_path().unwrap().ends_with("test_app.sym"));
    // minidump2.stackwalk.out, frame 0 at eip 0x0040429e:
    // test_app.exe!`anonymous namespace'::CrashFunction [test_app.cc : 58 + 0x3]
    let hit = m.lookup(0x429e).unwrap();
    assert_eq!(hit.name, "`anonymous namespace'::CrashFunction");
    assert_eq!((hit.start_rva, hit.line), (0x4290, Some(58)));
    assert!(hit.file.unwrap().ends_with("test_app.cc"));
}

#[test]
fn breakpad_sym_xz_and_plain_sym_mismatch() {
    ntdbg_testutil::require_testdata!();
    // A Firefox .sym.xz in store layout.
    let root = testdata("mozilla-minidump-stackwalk-pgo/pgo_data/symbols");
    let pdb_dir = root.join("ntdll.pdb");
    let id_dir = std::fs::read_dir(&pdb_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let id = id_dir.file_name().into_string().unwrap();
    let module = module_with_codeview(
        0x7ffa_0000_0000,
        0x1f0000,
        r"C:\Windows\System32\ntdll.dll",
        "ntdll.pdb",
        &id,
    );
    let store = store_for(&[root.to_str().unwrap()]);
    let m = store.module(&module, &no_memory);
    assert_eq!(m.status(), SymbolStatus::Breakpad, "{}", tried_text(&m));
    assert!(m
        .symbol_file_path()
        .unwrap()
        .to_str()
        .unwrap()
        .ends_with("ntdll.sym.xz"));
    let entry = m.find("NtWaitForSingleObject");
    assert_eq!(entry.len(), 1, "{entry:?}");
    assert_eq!(
        m.lookup(entry[0].rva).unwrap().name,
        "NtWaitForSingleObject"
    );

    // The same file, plain, for a module with a different debug id: rejected.
    let s = Scratch::new("xz");
    s.put(&id_dir.path().join("ntdll.sym.xz"), "ntdll.sym.xz");
    let other = module_with_codeview(0x1000, 0x1000, "ntdll.dll", "ntdll.pdb", CRASHY_X64_ID);
    let m = store_for(&[&s.path_text()]).module(&other, &no_memory);
    assert_eq!(m.status(), SymbolStatus::NoSymbols);
    assert!(
        tried_text(&m).contains("debug id mismatch"),
        "{}",
        tried_text(&m)
    );
}

#[test]
fn driver_in_a_symbol_store_without_codeview() {
    ntdbg_testutil::require_testdata!();
    // rizin's store: amdppm.sys/C9C030003b000/amdppm.sys and amdppm.pdb/<id>/amdppm.pdb.
    let root = testdata("rizin-test-pdb-repository");
    let mut module = minidump::MinidumpModule::new(
        0xfffff804_8b570000,
        0x3b000,
        r"\SystemRoot\System32\drivers\amdppm.sys",
    );
    module.raw.time_date_stamp = 0xc9c03000;
    let store = store_for(&[root.to_str().unwrap()]);
    let m = store.module(&module, &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{}", tried_text(&m));
    assert!(m
        .image_path()
        .unwrap()
        .ends_with("amdppm.sys/c9c030003b000/amdppm.sys"));
    assert!(m
        .symbol_file_path()
        .unwrap()
        .ends_with("amdppm.pdb/1C19FDDB27BB3399D9B45973EFEAFCF31/amdppm.pdb"));
    assert!(m.resolve("AcpiCStateIdleExecute").is_some() || !m.find("*Idle*").is_empty());
    let v = m.image_info().and_then(|i| i.version.clone()).unwrap();
    assert_eq!(v.string("OriginalFilename"), Some("amdppm.sys"));
}

#[test]
fn real_dump_codeview_record() {
    ntdbg_testutil::require_testdata!();
    // lldb's sigsegv.dmp: a real CodeView record, the PDB next to it, no image.
    let inputs = testdata("llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs");
    let dump = minidump::Minidump::read_path(inputs.join("sigsegv.dmp")).unwrap();
    let modules = dump.get_stream::<minidump::MinidumpModuleList>().unwrap();
    let module = modules
        .iter()
        .find(|m| m.name.ends_with("sigsegv.exe"))
        .unwrap();
    let store = store_for(&[inputs.to_str().unwrap()]);
    let m = store.module(module, &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{}", tried_text(&m));
    assert_eq!(
        m.pdb_identity().unwrap().1,
        "7DD47A9FC2E8499AA78EC14AE2C965A21"
    );
    // The faulting instruction (EXPECTED.json): 0x7ff7a13110d9.
    let rva = 0x7ff7_a131_10d9 - module.raw.base_of_image;
    // The faulting store `*(int*)0 = 0` is in crash(bool) (the code bytes in the dump, see
    // EXPECTED.json's disassembly, are its body: store, printf call, epilogue).
    let hit = m.lookup(rva).unwrap();
    assert_eq!(hit.name, "crash(bool)", "{hit:?}");
    assert!(
        hit.file.as_deref().unwrap().ends_with("sigsegv.cpp"),
        "{hit:?}"
    );
    assert!(hit.line.is_some(), "{hit:?}");
}

#[test]
fn symbol_path_notes() {
    ntdbg_testutil::require_testdata!();
    let store = SymbolStore::new(
        SymbolPath::parse("/nonexistent/ntdbg-dir;srv*/nonexistent/cache*https://msdl.microsoft.com/download/symbols").unwrap(),
    );
    // Offline: the server is named in `tried` but not contacted (tests/http_server.rs has
    // the downloads).
    store.set_offline(true);
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::NoSymbols);
    let tried = tried_text(&m);
    assert!(
        tried.contains("/nonexistent/ntdbg-dir: directory not found"),
        "{tried}"
    );
    assert!(
        tried.contains(
            "https://msdl.microsoft.com/download/symbols: offline, symbol server not contacted"
        ),
        "{tried}"
    );
    // Changing the path drops the cache.
    let dir = testdata("winelab/x64");
    store.set_path(SymbolPath::parse(dir.to_str().unwrap()).unwrap());
    assert!(store.loaded(CRASHY_X64_BASE).is_none());
    assert_eq!(
        store.module(&crashy_x64_module(), &no_memory).status(),
        SymbolStatus::Pdb
    );
}

#[test]
fn inline_frames_and_public_symbols() {
    ntdbg_testutil::require_testdata!();
    let dir = testdata("winelab/x64");
    let store = store_for(&[dir.to_str().unwrap()]);
    let m = store.module(&crashy_x64_wine_module(), &no_memory);
    // breakpoint.*.dmp stop at 0x140001be4: the int3 of __debugbreak() inlined into
    // mode_breakpoint() at crashy.c:135.
    let hit = m.lookup(0x1be4).unwrap();
    assert_eq!(hit.name, "mode_breakpoint()");
    assert_eq!(hit.line, Some(135));
    assert_eq!(hit.inlines.len(), 1, "{hit:?}");
    assert_eq!(hit.inlines[0].name, "__debugbreak()");
    assert!(
        hit.inlines[0]
            .file
            .as_deref()
            .unwrap()
            .ends_with("_mingw.h"),
        "{hit:?}"
    );
    assert!(hit.inlines[0].line.is_some());
    // Outside the inlined instruction there is no inline frame.
    assert!(m.lookup(0x1be0).unwrap().inlines.is_empty());
    // null.inproc.json frame 4: crashy.exe!mainCRTStartup + 0x15 (a public symbol only).
    let hit = m.lookup(0x14e5).unwrap();
    assert_eq!(
        (hit.name.as_str(), hit.start_rva, hit.size),
        ("mainCRTStartup", 0x14d0, None)
    );
    assert!(hit.is_public);
    assert_eq!(m.function_range(0x14e5), None);
    // Frame 3 (0x13ad) is in MinGW's static __tmainCRTStartup, which has no symbol at all.
    assert!(m.lookup(0x13ad).is_none());
    // Data publics are found by name but never used for code addresses.
    assert!(m.find("*").iter().any(|e| !e.is_function));
}

#[test]
fn pdb_at_the_codeview_path() {
    ntdbg_testutil::require_testdata!();
    // The build machine's path in the CodeView record is used last, when it is local and
    // the store allows it.
    let pdb = testdata("winelab/x64/crashy.pdb");
    let module = {
        let mut m = module_with_codeview(
            CRASHY_X64_BASE,
            0x5c000,
            r"Z:\tmp\crashy.exe",
            pdb.to_str().unwrap(),
            CRASHY_X64_ID,
        );
        m.raw.time_date_stamp = 0x6b0cccd2;
        m
    };
    let empty = Scratch::new("cvpath");
    let store = store_for(&[&empty.path_text()]);
    // Off by default: a path named by the dump is not opened.
    assert_eq!(
        store.module(&module, &no_memory).status(),
        SymbolStatus::NoSymbols
    );
    store.set_codeview_paths(true);
    let m = store.module(&module, &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{}", tried_text(&m));
    assert_eq!(m.symbol_file_path(), Some(pdb.as_path()));
    assert_eq!(m.lookup(0x2134).unwrap().name, "crash_null_write(int*)");
}

#[test]
fn symbolic_mini_dump_with_sym_and_with_pdb() {
    ntdbg_testutil::require_testdata!();
    // symbolic's mini.dmp (x86, MSVC): crash.exe with a CodeView record; its folder holds
    // crash.sym, crash.pdb and crash.exe. minidump-stackwalk (crash.sym) frames:
    // main [main.cpp:35] at 0x2a3d, __scrt_common_main_seh [exe_common.inl:283] at 0x2d96.
    let dir = testdata("getsentry-symbolic/symbolic-testutils/fixtures/windows");
    let dump = minidump::Minidump::read_path(dir.join("mini.dmp")).unwrap();
    let modules = dump.get_stream::<minidump::MinidumpModuleList>().unwrap();
    let module = modules
        .iter()
        .find(|m| m.name.ends_with("crash.exe"))
        .unwrap();

    // With both in one folder the PDB wins (it has inline frames and parameter lists).
    let both = store_for(&[dir.to_str().unwrap()]).module(module, &no_memory);
    assert_eq!(both.status(), SymbolStatus::Pdb, "{}", tried_text(&both));

    // The .sym alone.
    let sym_only = Scratch::new("mini-sym");
    sym_only.put(&dir.join("crash.sym"), "crash.sym");
    let m = store_for(&[&sym_only.path_text()]).module(module, &no_memory);
    assert_eq!(m.status(), SymbolStatus::Breakpad, "{}", tried_text(&m));
    assert!(m.symbol_file_path().unwrap().ends_with("crash.sym"));
    let hit = m.lookup(0x2a3d).unwrap();
    assert_eq!((hit.name.as_str(), hit.line), ("main", Some(35)));

    let s = Scratch::new("mini");
    s.put(&dir.join("crash.pdb"), "crash.pdb");
    let m = store_for(&[&s.path_text()]).module(module, &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{}", tried_text(&m));
    let hit = m.lookup(0x2a3d).unwrap();
    assert!(hit.name.starts_with("main("), "{hit:?}");
    assert_eq!(hit.line, Some(35));
    assert!(hit.file.unwrap().ends_with("main.cpp"));
    let hit = m.lookup(0x2d96).unwrap();
    assert!(hit.name.starts_with("__scrt_common_main_seh"), "{hit:?}");
    assert_eq!(hit.line, Some(283));
}
