//! Export-table fallback symbols: a DLL with no PDB or `.sym` on the symbol path is named
//! from its export table, and the names agree with the DLL's own PDB.

use crate::common;

use common::{no_memory, testdata, Scratch};
use minidump::MinidumpModule;
use ntdbg_formats::pe::{PeInfo, PeLayout};
use ntdbg_symbols::{SharedBytes, SymbolPath, SymbolStatus, SymbolStore};

const DLL: &str = "rizin-testbins/pe/microsoft_seh_tests/x64/xframe_eh_dll.dll";
const BASE: u64 = 0x1_8000_0000;

fn module() -> MinidumpModule {
    let mut m = MinidumpModule::new(BASE, 0x8000, r"C:\app\xframe_eh_dll.dll");
    m.raw.time_date_stamp = 0x6252_4d62;
    m
}

#[test]
fn exports_name_code_when_no_pdb_exists() {
    ntdbg_testutil::require_testdata!();
    let bytes = std::fs::read(testdata(DLL)).unwrap();
    let pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
    let exports = pe.exports(&bytes, PeLayout::File).unwrap();
    assert!(!exports.is_empty());

    // Only the DLL: export symbols.
    let dir = Scratch::new("exports-only");
    dir.put(&testdata(DLL), "xframe_eh_dll.dll");
    let store = SymbolStore::new(SymbolPath::parse(&dir.path_text()).unwrap());
    let m = store.module(&module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::ExportSymbols, "{:#?}", m.tried());
    assert_eq!(m.status().label(), "export symbols");
    assert!(
        m.tried()
            .last()
            .unwrap()
            .ends_with("exports loaded (export symbols)"),
        "{:#?}",
        m.tried()
    );

    // With the PDB beside it: the same names at the same addresses.
    let with_pdb = SymbolStore::new(
        SymbolPath::parse(testdata(DLL).parent().unwrap().to_str().unwrap()).unwrap(),
    );
    let p = with_pdb.module(&module(), &no_memory);
    assert_eq!(p.status(), SymbolStatus::Pdb, "{:#?}", p.tried());
    for e in exports.iter().filter(|e| e.forwarder.is_none()) {
        let name = e.name.as_deref().unwrap();
        let hit = m.lookup(u64::from(e.rva)).unwrap();
        assert_eq!(hit.name, name);
        assert_eq!(hit.start_rva, u64::from(e.rva));
        assert!(hit.is_public);
        // An address inside the export: `name+offset`, as the PDB says too.
        let pdb_hit = p.lookup(u64::from(e.rva) + 2).unwrap();
        assert!(
            ntdbg_symbols::strip_parameters(&pdb_hit.name).ends_with(name),
            "{name} vs {}",
            pdb_hit.name
        );
        assert_eq!(m.lookup(u64::from(e.rva) + 2).unwrap().name, name);
        eprintln!("{:#x} {name} (pdb: {})", e.rva, pdb_hit.name);
    }
}

#[test]
fn exports_from_dump_memory() {
    ntdbg_testutil::require_testdata!();
    // The image as a full-memory dump holds it (mapped layout), not on the symbol path.
    let bytes = std::fs::read(testdata(DLL)).unwrap();
    let pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
    let mapped = ntdbg_formats::pe::map_file_image(&bytes, &pe).unwrap();
    let read = move |addr: u64, len: usize| -> Option<SharedBytes> {
        let start = usize::try_from(addr.checked_sub(BASE)?).ok()?;
        mapped
            .get(start..start.checked_add(len)?)
            .map(|b| b.to_vec().into())
    };
    let empty = Scratch::new("exports-empty");
    let store = SymbolStore::new(SymbolPath::parse(&empty.path_text()).unwrap());
    let m = store.module(&module(), &read);
    assert_eq!(m.status(), SymbolStatus::ExportSymbols, "{:#?}", m.tried());
    assert_eq!(m.symbol_file_path(), None);
    let first = pe
        .exports(&bytes, PeLayout::File)
        .unwrap()
        .into_iter()
        .find(|e| e.forwarder.is_none())
        .unwrap();
    assert_eq!(
        m.lookup(u64::from(first.rva) + 1).unwrap().name,
        first.name.unwrap()
    );
}

#[test]
fn wine_system_dlls_in_a_full_memory_dump() {
    ntdbg_testutil::require_testdata!();
    // null.inproc-full: MiniDumpWithFullMemory under Wine; kernel32/ntdll have no PDB anywhere,
    // their images are in the dump.
    let xz = std::fs::read(testdata("winelab/x64/null.inproc-full.dmp.xz")).unwrap();
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut liblzma::read::XzDecoder::new(&xz[..]), &mut raw).unwrap();
    let dir = Scratch::new("exports-full-dump");
    let path = dir.write("full.dmp", &raw);
    let dump = minidump::Minidump::read_path(&path).unwrap();
    let mut regions: Vec<(u64, Vec<u8>)> = Vec::new();
    if let Ok(list) = dump.get_stream::<minidump::MinidumpMemory64List>() {
        regions.extend(list.iter().map(|m| (m.base_address, m.bytes.to_vec())));
    }
    let read = move |addr: u64, len: usize| -> Option<SharedBytes> {
        regions.iter().find_map(|(base, bytes)| {
            let start = usize::try_from(addr.checked_sub(*base)?).ok()?;
            bytes
                .get(start..start.checked_add(len)?)
                .map(|b| b.to_vec().into())
        })
    };
    let modules = dump.get_stream::<minidump::MinidumpModuleList>().unwrap();
    let store = SymbolStore::new(SymbolPath::parse(&dir.path_text()).unwrap());
    let kernel32 = modules
        .iter()
        .find(|m| m.name.to_ascii_lowercase().ends_with("kernel32.dll"))
        .unwrap();
    let k = store.module(kernel32, &read);
    assert_eq!(k.status(), SymbolStatus::ExportSymbols, "{:#?}", k.tried());
    // The return address of frame 05 in `kn`: kernel32!BaseThreadInitThunk+0x9.
    let hit = k.lookup(0x7b62_7e49 - 0x7b60_0000).unwrap();
    assert_eq!(
        (hit.name.as_str(), 0x27e49 - hit.start_rva),
        ("BaseThreadInitThunk", 9)
    );
    assert!(k.resolve("CreateFileW").is_some());
}
