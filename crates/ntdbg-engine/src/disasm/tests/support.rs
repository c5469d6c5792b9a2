//! Test doubles and parsers: a sparse memory, a table-driven namer, hex and address parsing, the
//! `name (address)` pairs of a WinDbg line, and a minimal PE reader for `.text` and `.pdata`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::disasm::{AddressNamer, Bitness, CodeMemory};

/// How far past its start a symbol of [`TableNamer`] reaches.
const MAX_SYMBOL_SIZE: u64 = 0x1_0000;

/// Byte-addressed memory; reads stop at the first missing byte.
#[derive(Default)]
pub struct SparseMemory {
    bytes: BTreeMap<u64, u8>,
}

impl SparseMemory {
    /// Maps `bytes` at `addr`.
    pub fn map(&mut self, addr: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            self.bytes.insert(addr.wrapping_add(i as u64), *b);
        }
    }
}

impl CodeMemory for SparseMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            match self.bytes.get(&addr.wrapping_add(n as u64)) {
                Some(b) => buf[n] = *b,
                None => break,
            }
            n += 1;
        }
        n
    }
}

/// Names from tables: exact names first, else the nearest symbol start at most 64 KiB below the
/// address (`sym+0x..`; a bare module name reaches any distance); function ranges and source
/// lines by address.
#[derive(Default)]
pub struct TableNamer {
    /// Exact names (from `name (address)` in transcripts).
    pub exact: HashMap<u64, String>,
    /// Symbol starts.
    pub symbols: BTreeMap<u64, String>,
    /// Function ranges `[start, end)`.
    pub ranges: Vec<(u64, u64)>,
    /// Source lines by exact address.
    pub lines: HashMap<u64, String>,
}

impl TableNamer {
    /// Adds a symbol starting at `addr`.
    pub fn symbol(&mut self, addr: u64, name: &str) -> &mut Self {
        self.symbols.insert(addr, name.to_string());
        self
    }

    /// Adds a function `[start, end)` named `name`.
    pub fn function(&mut self, start: u64, end: u64, name: &str) -> &mut Self {
        self.ranges.push((start, end));
        self.symbol(start, name)
    }
}

impl AddressNamer for TableNamer {
    fn name(&self, addr: u64) -> Option<String> {
        if let Some(name) = self.exact.get(&addr) {
            return Some(name.clone());
        }
        let (start, name) = self.symbols.range(..=addr).next_back()?;
        let is_module = !name.contains('!');
        if addr - start >= MAX_SYMBOL_SIZE && !is_module {
            return None;
        }
        Some(if *start == addr {
            name.clone()
        } else {
            format!("{name}+0x{:x}", addr - start)
        })
    }

    fn function_range(&self, addr: u64) -> Option<(u64, u64)> {
        self.ranges
            .iter()
            .copied()
            .find(|(start, end)| (*start..*end).contains(&addr))
    }

    fn source_line(&self, addr: u64) -> Option<String> {
        self.lines.get(&addr).cloned()
    }
}

/// Bytes of a hex string (`c7042a000000`).
pub fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length: {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex byte"))
        .collect()
}

/// A WinDbg address (`00000001`40002134` or `00401ef3`) and the bitness its shape implies.
pub fn address(s: &str) -> (u64, Bitness) {
    let bitness = if s.contains('`') {
        Bitness::Bits64
    } else {
        Bitness::Bits32
    };
    let digits: String = s.chars().filter(|c| *c != '`').collect();
    (u64::from_str_radix(&digits, 16).expect("address"), bitness)
}

/// The `name (address)` pairs in a WinDbg line (`call    foo!bar (00401000)`).
pub fn names_in(line: &str) -> Vec<(u64, String)> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find(" (") {
        let after = &rest[open + 2..];
        let Some(close) = after.find(')') else { break };
        let inner = &after[..close];
        let is_address = !inner.is_empty()
            && inner.chars().all(|c| c.is_ascii_hexdigit() || c == '`')
            && inner.len() >= 8;
        if is_address {
            let before = &rest[..open];
            let start = before.rfind([' ', '[', ',']).map_or(0, |p| p + 1);
            found.push((address(inner).0, before[start..].to_string()));
        }
        rest = &after[close..];
    }
    found
}

/// The code of a PE image: `.text` mapped at its virtual address, plus `.pdata` function ranges
/// (x64 only).
pub struct PeCode {
    /// Image base.
    pub image_base: u64,
    /// Virtual address of `.text`.
    pub text_va: u64,
    /// `.text` contents (raw size).
    pub text: Vec<u8>,
    /// `[start, end)` of every RUNTIME_FUNCTION in `.pdata`.
    pub functions: Vec<(u64, u64)>,
}

impl PeCode {
    /// Memory holding `.text`.
    pub fn memory(&self) -> SparseMemory {
        let mut memory = SparseMemory::default();
        memory.map(self.text_va, &self.text);
        memory
    }

    /// `len` bytes of `.text` at virtual address `va`.
    pub fn bytes_at(&self, va: u64, len: usize) -> &[u8] {
        let offset = usize::try_from(va - self.text_va).expect("offset");
        &self.text[offset..offset + len]
    }
}

fn u16_at(data: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([data[at], data[at + 1]])
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

/// Reads `.text` and `.pdata` from the PE file at `path` (a few lines of header parsing).
pub fn pe_code(path: &Path) -> PeCode {
    let data = std::fs::read(path).expect("read PE");
    let pe = u32_at(&data, 0x3c) as usize;
    assert_eq!(&data[pe..pe + 4], b"PE\0\0");
    let coff = pe + 4;
    let sections = u16_at(&data, coff + 2) as usize;
    let optional_size = u16_at(&data, coff + 16) as usize;
    let optional = coff + 20;
    let image_base = match u16_at(&data, optional) {
        0x20b => u64::from_le_bytes(data[optional + 24..optional + 32].try_into().expect("8")),
        _ => u64::from(u32_at(&data, optional + 28)),
    };
    let mut code = PeCode {
        image_base,
        text_va: 0,
        text: Vec::new(),
        functions: Vec::new(),
    };
    let mut pdata = Vec::new();
    for i in 0..sections {
        let header = optional + optional_size + i * 40;
        let name = &data[header..header + 8];
        let virtual_size = u32_at(&data, header + 8) as usize;
        let va = u64::from(u32_at(&data, header + 12));
        let raw_size = u32_at(&data, header + 16) as usize;
        let raw = u32_at(&data, header + 20) as usize;
        let contents = &data[raw..raw + raw_size.min(virtual_size.max(raw_size))];
        if name.starts_with(b".text\0") {
            code.text_va = image_base + va;
            code.text = contents[..virtual_size.min(contents.len())].to_vec();
        } else if name.starts_with(b".pdata\0") {
            pdata = contents[..virtual_size.min(contents.len())].to_vec();
        }
    }
    code.functions = pdata
        .chunks_exact(12)
        .map(|entry| {
            (
                image_base + u64::from(u32_at(entry, 0)),
                image_base + u64::from(u32_at(entry, 4)),
            )
        })
        .filter(|(start, end)| start < end)
        .collect();
    code
}
