//! PE parsing against real images from the shared corpus, and on damaged input.

use super::*;
use ntdbg_testutil::testdata;

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(testdata(rel)).unwrap()
}

#[test]
fn crashy_x64_file_layout() {
    ntdbg_testutil::require_testdata!();
    let bytes = read("winelab/x64/crashy.exe");
    let pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
    assert_eq!(pe.machine, Machine::X64);
    assert!(pe.pe32_plus);
    assert_eq!(pe.time_date_stamp, 0x6b0cccd2);
    assert_eq!(pe.size_of_image, 0x5c000);
    assert_eq!(pe.image_base, 0x1_4000_0000);
    assert_eq!(pe.image_key(), "6B0CCCD25c000");
    let cv = pe.codeview.clone().unwrap();
    assert_eq!(cv.identity().name, "crashy.pdb");
    assert_eq!(cv.identity().key(), "99B57C97E2C099B24C4C44205044422E1");
    let pdata = pe.exception_directory.unwrap();
    assert!(pdata.size > 0 && pdata.size % 12 == 0);
    assert!(pe
        .sections
        .iter()
        .any(|s| s.name == ".text" && s.is_executable()));
    assert!(pe.warnings.is_empty(), "{:?}", pe.warnings);
}

#[test]
fn crashy_x86_file_layout() {
    ntdbg_testutil::require_testdata!();
    let bytes = read("winelab/x86/crashy.exe");
    let pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
    assert_eq!(pe.machine, Machine::X86);
    assert!(!pe.pe32_plus);
    assert_eq!(pe.image_base, 0x40_0000);
    assert_eq!(pe.codeview.unwrap().identity().name, "crashy.pdb");
    assert_eq!(pe.exception_directory, None);
}

#[test]
fn long_section_names_come_from_the_string_table() {
    // Our x86 crashy.exe (lld, MinGW runtime): `.debug_frame` and the other DWARF sections
    // have names longer than 8 bytes, written as `/nnn` offsets into the string table.
    let bytes = std::fs::read(ntdbg_testutil::repo_root().join("testdata/x86/crashy.exe")).unwrap();
    let pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
    let names: Vec<&str> = pe.sections.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&".debug_frame"), "{names:?}");
    assert!(names.contains(&".eh_fram"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with('/')), "{names:?}");
    assert!(pe.warnings.is_empty(), "{:?}", pe.warnings);
    // A string table cut off (it starts at 0x2fa00, 129 bytes): the names stay as written,
    // with a warning.
    let cut = &bytes[..0x2fa00 + 64];
    let pe = PeInfo::parse(cut, PeLayout::File).unwrap();
    assert!(pe.sections.iter().any(|s| s.name == "/4"));
    assert!(!pe.warnings.is_empty());
}

#[test]
fn mapped_layout_reads_the_same_identity() {
    ntdbg_testutil::require_testdata!();
    let bytes = read("winelab/x64/crashy.exe");
    let file = PeInfo::parse(&bytes, PeLayout::File).unwrap();
    let mapped = map_file_image(&bytes, &file).unwrap();
    assert_eq!(mapped.len(), 0x5c000);
    let pe = PeInfo::parse(&mapped, PeLayout::Mapped).unwrap();
    assert_eq!(pe.codeview, file.codeview);
    assert_eq!(pe.exception_directory, file.exception_directory);
    // The same sections, but long names only resolved from the file: the loader does not map
    // the COFF string table.
    assert_eq!(pe.sections.len(), file.sections.len());
    for (mapped, filed) in pe.sections.iter().zip(&file.sections) {
        let unnamed = SectionHeader {
            name: filed.name.clone(),
            ..mapped.clone()
        };
        assert_eq!(&unnamed, filed);
        assert!(mapped.name == filed.name || mapped.name.starts_with('/'));
    }
    // The exception directory reads the same bytes in both layouts.
    let dir = file.exception_directory.unwrap();
    assert_eq!(
        file.data_at_rva(&bytes, PeLayout::File, dir.rva, dir.size, "pdata")
            .unwrap(),
        pe.data_at_rva(&mapped, PeLayout::Mapped, dir.rva, dir.size, "pdata")
            .unwrap()
    );
}

#[test]
fn driver_version_resource() {
    ntdbg_testutil::require_testdata!();
    let bytes = read("rizin-test-pdb-repository/amdppm.sys/c9c030003b000/amdppm.sys");
    let pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
    assert_eq!(pe.machine, Machine::X64);
    assert_eq!(pe.image_key().to_ascii_lowercase(), "c9c030003b000");
    let cv = pe.codeview.clone().unwrap().identity();
    assert_eq!(cv.name, "amdppm.pdb");
    assert_eq!(cv.key(), "1C19FDDB27BB3399D9B45973EFEAFCF31");
    let version = pe
        .version
        .clone()
        .expect("amdppm.sys has a version resource");
    assert_eq!(version.file_version[0], 10);
    assert_eq!(version.string("CompanyName"), Some("Microsoft Corporation"));
    assert!(version
        .string("FileVersion")
        .is_some_and(|v| v.starts_with(&version.file_version_string()[..4])));
    // Mapped layout finds the same resource.
    let mapped = map_file_image(&bytes, &pe).unwrap();
    let again = PeInfo::parse(&mapped, PeLayout::Mapped).unwrap();
    assert_eq!(again.version, pe.version);
}

#[test]
fn arm64_image() {
    ntdbg_testutil::require_testdata!();
    let bytes = read("getsentry-symbolic/symbolic-testutils/fixtures/windows/arm64/test.exe");
    let pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
    assert_eq!(pe.machine, Machine::Arm64);
    assert!(pe.exception_directory.is_some());
}

#[test]
fn not_a_pe() {
    ntdbg_testutil::require_testdata!();
    assert_eq!(
        PeInfo::parse(b"", PeLayout::File).unwrap_err().code(),
        "truncated"
    );
    assert_eq!(
        PeInfo::parse(b"ELF\x7f and more bytes", PeLayout::File)
            .unwrap_err()
            .code(),
        "bad_magic"
    );
    let mut bytes = read("winelab/x64/crashy.exe");
    // NT signature destroyed.
    let nt = u32::from_le_bytes(bytes[0x3c..0x40].try_into().unwrap()) as usize;
    bytes[nt] = b'X';
    assert_eq!(
        PeInfo::parse(&bytes, PeLayout::File).unwrap_err().code(),
        "bad_magic"
    );
}

#[test]
fn truncated_and_corrupted_images_never_panic() {
    ntdbg_testutil::require_testdata!();
    let bytes = read("winelab/x64/crashy.exe");
    // Every prefix up to well past the headers, then coarser steps.
    let mut cut = 0;
    while cut < bytes.len() {
        let _ = PeInfo::parse(&bytes[..cut], PeLayout::File);
        let _ = PeInfo::parse(&bytes[..cut], PeLayout::Mapped);
        cut += if cut < 0x600 { 1 } else { 997 };
    }
    // Flip bytes across the headers and directories (deterministic pseudo-random walk).
    let mut state = 0x2545_f491_u32;
    for _ in 0..3000 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let mut damaged = bytes.clone();
        let at = (state as usize) % 0x600;
        damaged[at] = (state >> 8) as u8;
        let at2 = (state as usize >> 3) % damaged.len();
        damaged[at2] ^= 0xff;
        if let Ok(pe) = PeInfo::parse(&damaged, PeLayout::File) {
            if pe.size_of_image <= 0x100_0000 {
                let _ = map_file_image(&damaged, &pe);
            }
        }
        let _ = PeInfo::parse(&damaged, PeLayout::Mapped);
    }
}

#[test]
fn huge_size_of_image_is_refused_when_mapping() {
    ntdbg_testutil::require_testdata!();
    let bytes = read("winelab/x64/crashy.exe");
    let mut pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
    pe.size_of_image = u32::MAX;
    assert_eq!(
        map_file_image(&bytes, &pe).unwrap_err().code(),
        "unsupported"
    );
}
