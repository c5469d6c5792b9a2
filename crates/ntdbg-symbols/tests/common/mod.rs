//! Helpers shared by the integration tests: scratch directories, modules with or without a
//! CodeView record, and a frame walker over a real dump's stack.
#![allow(dead_code)]

pub mod http;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use breakpad_symbols::FrameWalker;
use minidump::format::{CV_INFO_PDB70, GUID};
use minidump::{CodeView, MinidumpModule};
use ntdbg_formats::store::parse_debug_id;
use ntdbg_symbols::SharedBytes;

pub use ntdbg_testutil::testdata;

/// The winelab x64 crashy.pdb debug id.
pub const CRASHY_X64_ID: &str = "99B57C97E2C099B24C4C44205044422E1";
/// Where the x64 crashy.exe is loaded in the winelab dumps.
pub const CRASHY_X64_BASE: u64 = 0x1_4000_0000;

/// A scratch directory, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "ntdbg-symbols-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Copies a test data file to `rel` below the scratch directory.
    pub fn put(&self, from: &Path, rel: &str) -> PathBuf {
        let to = self.0.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, &to).unwrap();
        to
    }

    /// Writes bytes to `rel` below the scratch directory.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let to = self.0.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(&to, bytes).unwrap();
        to
    }

    pub fn path_text(&self) -> String {
        self.0.to_str().unwrap().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A module record as a dump with a CodeView record would have it.
pub fn module_with_codeview(
    base: u64,
    size: u32,
    code_file: &str,
    pdb_name: &str,
    debug_id: &str,
) -> MinidumpModule {
    let (guid, age) = parse_debug_id(debug_id).unwrap();
    let b = guid.as_bytes();
    let mut m = MinidumpModule::new(base, size, code_file);
    m.codeview_info = Some(CodeView::Pdb70(CV_INFO_PDB70 {
        cv_signature: 0x5344_5352,
        signature: GUID {
            data1: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            data2: u16::from_be_bytes([b[4], b[5]]),
            data3: u16::from_be_bytes([b[6], b[7]]),
            data4: [b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]],
        },
        age,
        pdb_file_name: pdb_name.as_bytes().to_vec(),
    }));
    m
}

/// The winelab x64 crashy.exe as a dump with a CodeView record describes it.
pub fn crashy_x64_module() -> MinidumpModule {
    let mut m = module_with_codeview(
        CRASHY_X64_BASE,
        0x5c000,
        r"Z:\tmp\crashy.exe",
        r"Z:\build\crashy.pdb",
        CRASHY_X64_ID,
    );
    m.raw.time_date_stamp = 0x6b0cccd2;
    m
}

/// The winelab x64 crashy.exe as Wine writes it: no CodeView record.
pub fn crashy_x64_wine_module() -> MinidumpModule {
    let mut m = MinidumpModule::new(CRASHY_X64_BASE, 0x5c000, r"Z:\tmp\crashy.exe");
    m.raw.time_date_stamp = 0x6b0cccd2;
    m
}

/// No dump memory at all.
pub fn no_memory(_: u64, _: usize) -> Option<SharedBytes> {
    None
}

/// A frame walker over a fixed register set and stack, recording what the unwinder sets.
pub struct TestWalker {
    pub instruction: u64,
    pub has_grand_callee: bool,
    pub callee: HashMap<&'static str, u64>,
    pub stack: HashMap<u64, u64>,
    pub regions: Vec<(u64, Vec<u8>)>,
    /// Values for addresses nowhere else (synthetic stacks).
    pub any: Option<fn(u64) -> u64>,
    pub word: u64,
    pub caller: HashMap<String, u64>,
    pub cfa: Option<u64>,
    pub ra: Option<u64>,
}

impl TestWalker {
    pub fn new(instruction: u64, callee: &[(&'static str, u64)], word: u64) -> TestWalker {
        TestWalker {
            instruction,
            has_grand_callee: false,
            callee: callee.iter().copied().collect(),
            stack: HashMap::new(),
            regions: Vec::new(),
            any: None,
            word,
            caller: HashMap::new(),
            cfa: None,
            ra: None,
        }
    }
}

impl FrameWalker for TestWalker {
    fn get_instruction(&self) -> u64 {
        self.instruction
    }
    fn has_grand_callee(&self) -> bool {
        self.has_grand_callee
    }
    fn get_grand_callee_parameter_size(&self) -> u32 {
        0
    }
    fn get_register_at_address(&self, address: u64) -> Option<u64> {
        if let Some(v) = self.stack.get(&address) {
            return Some(*v);
        }
        let n = self.word as usize;
        self.regions
            .iter()
            .find_map(|(base, bytes)| {
                let off = usize::try_from(address.checked_sub(*base)?).ok()?;
                let b = bytes.get(off..off.checked_add(n)?)?;
                let mut v = [0u8; 8];
                v[..n].copy_from_slice(b);
                Some(u64::from_le_bytes(v))
            })
            .or_else(|| self.any.map(|f| f(address)))
    }
    fn get_callee_register(&self, name: &str) -> Option<u64> {
        self.callee.get(name).copied()
    }
    fn set_caller_register(&mut self, name: &str, val: u64) -> Option<()> {
        self.caller.insert(name.to_string(), val);
        Some(())
    }
    fn clear_caller_register(&mut self, name: &str) {
        self.caller.remove(name);
    }
    fn set_cfa(&mut self, val: u64) -> Option<()> {
        self.cfa = Some(val);
        Some(())
    }
    fn set_ra(&mut self, val: u64) -> Option<()> {
        self.ra = Some(val);
        Some(())
    }
}

/// A dump's memory regions (address, bytes).
pub fn dump_regions(dump: &minidump::MmapMinidump) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    if let Ok(list) = dump.get_stream::<minidump::MinidumpMemoryList>() {
        for mem in list.iter() {
            out.push((mem.base_address, mem.bytes.to_vec()));
        }
    }
    out
}

/// A CAB (MSZIP) holding one file, as symbol stores keep `name.pd_`.
pub fn cab_of(name: &str, data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut builder = cab::CabinetBuilder::new();
    builder
        .add_folder(cab::CompressionType::MsZip)
        .add_file(name);
    let mut writer = builder.build(std::io::Cursor::new(Vec::new())).unwrap();
    while let Some(mut w) = writer.next_file().unwrap() {
        w.write_all(data).unwrap();
    }
    writer.finish().unwrap().into_inner()
}
