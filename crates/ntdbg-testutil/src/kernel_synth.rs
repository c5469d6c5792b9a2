//! A synthetic kernel-dump generator for tests: `PAGEDU64` full (DumpType 1), kernel (2) and
//! bitmap (5) dumps with valid headers, physical memory runs or bitmaps, and x64 page tables
//! mapping known pages. Everything it writes is synthetic; no real system produced it.
//!
//! ```
//! use ntdbg_testutil::kernel_synth::{KernelSynth, Layout};
//! let mut synth = KernelSynth::new(Layout::Full);
//! synth.write_virtual(0xffff_f800_0000_1000, b"hello");
//! let bytes = synth.build();
//! assert!(bytes.starts_with(b"PAGEDU64"));
//! ```

use std::collections::BTreeMap;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

/// Page size.
pub const PAGE: u64 = 0x1000;
/// Offset of `PhysicalMemoryBlock.NumberOfRuns` in the header.
pub const RUN_COUNT_OFFSET: usize = 0x88;
/// Offset of the first run (`BasePage`, `PageCount`, 16 bytes each).
pub const RUNS_OFFSET: usize = 0x98;
/// Offset of `DumpType`.
pub const DUMP_TYPE_OFFSET: usize = 0xf98;
/// Offset of the CONTEXT record.
pub const CONTEXT_OFFSET: usize = 0x348;
/// Size of the 64-bit header.
pub const HEADER_SIZE: u64 = 0x2000;

/// Which physical-memory layout the dump uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// DumpType 1: the header's runs, pages stored one after another.
    Full,
    /// DumpType 2: kernel summary dump (an `SDMP` bitmap).
    Kernel,
    /// DumpType 5: bitmap full dump (an `FDMP` bitmap).
    Bitmap,
    /// DumpType 8: Windows 10+ kernel memory dump (`RDMP` PFN ranges).
    KernelMemory,
    /// DumpType 10: Windows 10+ complete memory dump (`RDMP` PFN ranges).
    CompleteMemory,
}

impl Layout {
    fn is_rdmp(self) -> bool {
        matches!(self, Layout::KernelMemory | Layout::CompleteMemory)
    }
}

/// Builds a synthetic x64 kernel dump.
#[derive(Debug, Clone)]
pub struct KernelSynth {
    layout: Layout,
    /// Physical page contents by page frame number.
    phys: BTreeMap<u64, Vec<u8>>,
    /// Pages that are part of the memory layout (runs / bitmap) but hold zeros.
    zero_pages: Vec<(u64, u64)>,
    /// Pages left out of the dump on purpose (holes), though page tables may point at them.
    omitted: Vec<u64>,
    next_pfn: u64,
    pml4: u64,
    virt: BTreeMap<u64, u64>,
    explicit_runs: Option<Vec<(u64, u64)>>,
    /// Bugcheck code.
    pub bugcheck_code: u32,
    /// Bugcheck parameters.
    pub bugcheck_parameters: [u64; 4],
    /// The context's instruction pointer.
    pub rip: u64,
    /// The context's stack pointer.
    pub rsp: u64,
    /// `PsLoadedModuleList`.
    pub ps_loaded_module_list: u64,
    /// OS build written as MinorVersion.
    pub build: u32,
}

impl KernelSynth {
    /// An empty dump with a page-table root.
    pub fn new(layout: Layout) -> KernelSynth {
        let mut s = KernelSynth {
            layout,
            phys: BTreeMap::new(),
            zero_pages: Vec::new(),
            omitted: Vec::new(),
            next_pfn: 0x10,
            pml4: 0,
            virt: BTreeMap::new(),
            explicit_runs: None,
            bugcheck_code: 0xE2,
            bugcheck_parameters: [0; 4],
            rip: 0,
            rsp: 0,
            ps_loaded_module_list: 0,
            build: 19041,
        };
        s.pml4 = s.alloc();
        s
    }

    /// A fresh zeroed physical page.
    pub fn alloc(&mut self) -> u64 {
        let pfn = self.next_pfn;
        self.next_pfn += 1;
        self.phys.insert(pfn, vec![0; PAGE as usize]);
        pfn
    }

    /// The page-table root's physical address (DirectoryTableBase).
    pub fn dtb(&self) -> u64 {
        self.pml4 * PAGE
    }

    fn page_mut(&mut self, pfn: u64) -> &mut Vec<u8> {
        self.phys
            .entry(pfn)
            .or_insert_with(|| vec![0; PAGE as usize])
    }

    fn entry(&self, table: u64, index: u64) -> u64 {
        self.phys
            .get(&table)
            .map(|p| {
                let i = (index * 8) as usize;
                let mut b = [0u8; 8];
                b.copy_from_slice(&p[i..i + 8]);
                u64::from_le_bytes(b)
            })
            .unwrap_or(0)
    }

    fn set_entry(&mut self, table: u64, index: u64, value: u64) {
        let i = (index * 8) as usize;
        self.page_mut(table)[i..i + 8].copy_from_slice(&value.to_le_bytes());
    }

    fn ensure_table(&mut self, table: u64, index: u64) -> u64 {
        let e = self.entry(table, index);
        if e & 1 != 0 {
            return (e & 0x000f_ffff_ffff_f000) / PAGE;
        }
        let child = self.alloc();
        self.set_entry(table, index, (child * PAGE) | 3);
        child
    }

    fn idx(va: u64, shift: u32) -> u64 {
        (va >> shift) & 0x1ff
    }

    /// Maps the 4 KiB page at `va` to physical page `pfn` (creating tables as needed).
    pub fn map_4k(&mut self, va: u64, pfn: u64) {
        self.set_pte(va, (pfn * PAGE) | 3);
        self.virt.insert(va & !(PAGE - 1), pfn);
    }

    /// Writes a raw PTE for `va` (e.g. a non-present transition or prototype PTE).
    pub fn set_pte(&mut self, va: u64, pte: u64) {
        let pdpt = self.ensure_table(self.pml4, Self::idx(va, 39));
        let pd = self.ensure_table(pdpt, Self::idx(va, 30));
        let pt = self.ensure_table(pd, Self::idx(va, 21));
        self.set_entry(pt, Self::idx(va, 12), pte);
    }

    /// Maps a 2 MiB large page at `va` (2 MiB aligned) to physical `pa` (2 MiB aligned).
    pub fn map_2m(&mut self, va: u64, pa: u64) {
        let pdpt = self.ensure_table(self.pml4, Self::idx(va, 39));
        let pd = self.ensure_table(pdpt, Self::idx(va, 30));
        self.set_entry(pd, Self::idx(va, 21), pa | 0x83);
    }

    /// Maps a 1 GiB huge page at `va` (1 GiB aligned) to physical `pa` (1 GiB aligned).
    pub fn map_1g(&mut self, va: u64, pa: u64) {
        let pdpt = self.ensure_table(self.pml4, Self::idx(va, 39));
        self.set_entry(pdpt, Self::idx(va, 30), pa | 0x83);
    }

    /// Writes bytes at physical address `pa` (the pages become part of the dump).
    pub fn write_physical(&mut self, pa: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            let a = pa + i as u64;
            self.page_mut(a / PAGE)[(a % PAGE) as usize] = *b;
        }
    }

    /// Writes bytes at virtual address `va`, mapping fresh 4 KiB pages where needed.
    pub fn write_virtual(&mut self, va: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            let a = va + i as u64;
            let page = a & !(PAGE - 1);
            let pfn = match self.virt.get(&page) {
                Some(p) => *p,
                None => {
                    let p = self.alloc();
                    self.map_4k(page, p);
                    p
                }
            };
            self.page_mut(pfn)[(a % PAGE) as usize] = *b;
        }
    }

    /// Leaves physical page `pfn` out of the dump (a hole), whatever points at it.
    pub fn omit(&mut self, pfn: u64) {
        self.omitted.push(pfn);
    }

    /// Declares `count` zero pages from `base_pfn` present (they cost nothing in a sparse file).
    pub fn add_zero_pages(&mut self, base_pfn: u64, count: u64) {
        self.zero_pages.push((base_pfn, count));
    }

    /// Uses exactly these runs `(base_pfn, count)` for a full dump instead of deriving them.
    pub fn set_runs(&mut self, runs: Vec<(u64, u64)>) {
        self.explicit_runs = Some(runs);
    }

    /// Adds a `KLDR_DATA_TABLE_ENTRY` list (`PsLoadedModuleList`) holding these modules
    /// `(name, base, size, timestamp)`, each with a PE header at its base.
    pub fn add_module_list(&mut self, list_va: u64, modules: &[(&str, u64, u32, u32)]) {
        let entry_va = |i: usize| list_va + 0x100 + i as u64 * 0x200;
        let n = modules.len();
        let first = if n == 0 { list_va } else { entry_va(0) };
        let last = if n == 0 { list_va } else { entry_va(n - 1) };
        self.write_virtual(list_va, &first.to_le_bytes());
        self.write_virtual(list_va + 8, &last.to_le_bytes());
        for (i, (name, base, size, ts)) in modules.iter().enumerate() {
            let e = entry_va(i);
            let next = if i + 1 < n { entry_va(i + 1) } else { list_va };
            let prev = if i == 0 { list_va } else { entry_va(i - 1) };
            self.write_virtual(e, &next.to_le_bytes());
            self.write_virtual(e + 8, &prev.to_le_bytes());
            self.write_virtual(e + 0x30, &base.to_le_bytes());
            self.write_virtual(e + 0x40, &size.to_le_bytes());
            let utf16: Vec<u8> = name.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
            let name_va = e + 0x100;
            self.write_virtual(name_va, &utf16);
            for us in [0x48u64, 0x58] {
                self.write_virtual(e + us, &(utf16.len() as u16).to_le_bytes());
                self.write_virtual(e + us + 2, &(utf16.len() as u16).to_le_bytes());
                self.write_virtual(e + us + 8, &name_va.to_le_bytes());
            }
            // A minimal PE header: MZ, e_lfanew = 0x80, PE\0\0, TimeDateStamp.
            self.write_virtual(*base, b"MZ");
            self.write_virtual(base + 0x3c, &0x80u32.to_le_bytes());
            self.write_virtual(base + 0x80, b"PE\0\0");
            self.write_virtual(base + 0x88, &ts.to_le_bytes());
        }
        self.ps_loaded_module_list = list_va;
    }

    /// The present physical pages, sorted.
    fn present(&self) -> Vec<u64> {
        let mut pages: Vec<u64> = self.phys.keys().copied().collect();
        for (b, c) in &self.zero_pages {
            pages.extend(*b..b + c);
        }
        pages.sort_unstable();
        pages.dedup();
        pages.retain(|p| !self.omitted.contains(p));
        pages
    }

    fn runs(&self) -> Vec<(u64, u64)> {
        if let Some(r) = &self.explicit_runs {
            return r.clone();
        }
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for p in self.present() {
            match runs.last_mut() {
                Some((b, c)) if *b + *c == p => *c += 1,
                _ => runs.push((p, 1)),
            }
        }
        runs
    }

    /// The header (0x2000 bytes).
    fn header(&self, runs: &[(u64, u64)]) -> Vec<u8> {
        let mut h = b"PAGE".repeat((HEADER_SIZE / 4) as usize);
        let put32 =
            |h: &mut Vec<u8>, off: usize, v: u32| h[off..off + 4].copy_from_slice(&v.to_le_bytes());
        let put64 =
            |h: &mut Vec<u8>, off: usize, v: u64| h[off..off + 8].copy_from_slice(&v.to_le_bytes());
        h[..8].copy_from_slice(b"PAGEDU64");
        put32(&mut h, 0x08, 0xf);
        put32(&mut h, 0x0c, self.build);
        put64(&mut h, 0x10, self.dtb());
        put64(&mut h, 0x18, 0);
        put64(&mut h, 0x20, self.ps_loaded_module_list);
        put64(&mut h, 0x28, 0);
        put32(&mut h, 0x30, 0x8664);
        put32(&mut h, 0x34, 1);
        put32(&mut h, 0x38, self.bugcheck_code);
        for (i, p) in self.bugcheck_parameters.iter().enumerate() {
            put64(&mut h, 0x40 + i * 8, *p);
        }
        put64(&mut h, 0x80, 0);
        let pages: u64 = runs.iter().map(|r| r.1).sum();
        put32(&mut h, RUN_COUNT_OFFSET, runs.len() as u32);
        put32(&mut h, RUN_COUNT_OFFSET + 4, 0);
        put64(&mut h, 0x90, pages);
        for (i, (b, c)) in runs.iter().enumerate().take(42) {
            put64(&mut h, RUNS_OFFSET + i * 16, *b);
            put64(&mut h, RUNS_OFFSET + i * 16 + 8, *c);
        }
        // CONTEXT_AMD64: flags, segments, rsp, rip.
        h[CONTEXT_OFFSET..CONTEXT_OFFSET + 0x4d0].fill(0);
        put32(&mut h, CONTEXT_OFFSET + 0x30, 0x0010_001f);
        put32(&mut h, CONTEXT_OFFSET + 0x34, 0x1f80);
        h[CONTEXT_OFFSET + 0x38..CONTEXT_OFFSET + 0x3a].copy_from_slice(&0x10u16.to_le_bytes());
        h[CONTEXT_OFFSET + 0x42..CONTEXT_OFFSET + 0x44].copy_from_slice(&0x18u16.to_le_bytes());
        put64(&mut h, CONTEXT_OFFSET + 0x98, self.rsp);
        put64(&mut h, CONTEXT_OFFSET + 0xf8, self.rip);
        // EXCEPTION_RECORD64: the bugcheck breakpoint.
        h[0xf00..0xf98].fill(0);
        put32(&mut h, 0xf00, 0x8000_0003);
        put64(&mut h, 0xf10, self.rip);
        let dump_type = match self.layout {
            Layout::Full => 1,
            Layout::Kernel => 2,
            Layout::Bitmap => 5,
            Layout::KernelMemory => 8,
            Layout::CompleteMemory => 10,
        };
        put32(&mut h, DUMP_TYPE_OFFSET, dump_type);
        put64(&mut h, 0xfa0, 0);
        // 2021-02-21 01:38:22 UTC as a FILETIME.
        put64(&mut h, 0xfa8, 0x01d7_07f2_3dbb_3399);
        put32(&mut h, 0x1040, 1);
        put32(&mut h, 0x1044, 0x110);
        h
    }

    /// The whole dump in memory.
    pub fn build(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (off, bytes) in self.chunks() {
            let end = off as usize + bytes.len();
            if out.len() < end {
                out.resize(end, 0);
            }
            out[off as usize..end].copy_from_slice(&bytes);
        }
        out.resize(self.file_len() as usize, 0);
        out
    }

    /// Writes the dump as a sparse file: only the header and pages with content are written.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut f = std::fs::File::create(path)?;
        f.set_len(self.file_len())?;
        for (off, bytes) in self.chunks() {
            f.seek(SeekFrom::Start(off))?;
            f.write_all(&bytes)?;
        }
        f.flush()
    }

    /// Where the first page lies in an RDMP dump: after the RDMP header and its ranges.
    fn rdmp_first_page(&self) -> u64 {
        HEADER_SIZE + 0x30 + self.runs().len() as u64 * 16
    }

    fn file_len(&self) -> u64 {
        match self.layout {
            Layout::KernelMemory | Layout::CompleteMemory => {
                self.rdmp_first_page() + self.runs().iter().map(|r| r.1).sum::<u64>() * PAGE
            }
            Layout::Full => HEADER_SIZE + self.runs().iter().map(|r| r.1).sum::<u64>() * PAGE,
            Layout::Kernel | Layout::Bitmap => {
                let (first, _, _) = self.bitmap();
                first + self.present().len() as u64 * PAGE
            }
        }
    }

    /// `(first page offset, bitmap bit count, bitmap bytes)`.
    fn bitmap(&self) -> (u64, u64, Vec<u8>) {
        let present = self.present();
        let bits = present.last().map(|p| p + 1).unwrap_or(0).div_ceil(64) * 64;
        let mut map = vec![0u8; (bits / 8) as usize];
        for p in &present {
            map[(p / 8) as usize] |= 1 << (p % 8);
        }
        (HEADER_SIZE + 0x38 + map.len() as u64, bits, map)
    }

    /// `(file offset, bytes)` pieces of the file.
    fn chunks(&self) -> Vec<(u64, Vec<u8>)> {
        let runs = self.runs();
        let mut out = vec![(0, self.header(&runs))];
        match self.layout {
            Layout::Full | Layout::KernelMemory | Layout::CompleteMemory => {
                let mut offset = HEADER_SIZE;
                if self.layout.is_rdmp() {
                    let mut rh = Vec::new();
                    rh.extend_from_slice(&0x40u32.to_le_bytes());
                    rh.extend_from_slice(b"RDMPDUMP");
                    rh.extend_from_slice(&0u32.to_le_bytes());
                    let metadata = 0x10 + runs.len() as u64 * 16;
                    rh.extend_from_slice(&metadata.to_le_bytes());
                    offset = self.rdmp_first_page();
                    rh.extend_from_slice(&offset.to_le_bytes());
                    rh.extend_from_slice(&(runs.len() as u32).to_le_bytes());
                    rh.extend_from_slice(&0u32.to_le_bytes());
                    let pages: u64 = runs.iter().map(|r| r.1).sum();
                    rh.extend_from_slice(&pages.to_le_bytes());
                    for (b, c) in &runs {
                        rh.extend_from_slice(&b.to_le_bytes());
                        rh.extend_from_slice(&c.to_le_bytes());
                    }
                    out.push((HEADER_SIZE, rh));
                }
                for (b, c) in runs {
                    for (pfn, bytes) in self.phys.range(b..b + c) {
                        if !self.omitted.contains(pfn) {
                            out.push((offset + (pfn - b) * PAGE, bytes.clone()));
                        }
                    }
                    offset += c * PAGE;
                }
            }
            Layout::Kernel | Layout::Bitmap => {
                let (first, bits, map) = self.bitmap();
                let present = self.present();
                debug_assert!(!self.layout.is_rdmp());
                let mut bh = Vec::new();
                bh.extend_from_slice(if self.layout == Layout::Kernel {
                    b"SDMPDUMP"
                } else {
                    b"FDMPDUMP"
                });
                bh.resize(0x20, 0);
                bh.extend_from_slice(&first.to_le_bytes());
                bh.extend_from_slice(&(present.len() as u64).to_le_bytes());
                bh.extend_from_slice(&bits.to_le_bytes());
                bh.extend_from_slice(&map);
                out.push((HEADER_SIZE, bh));
                for (i, pfn) in present.iter().enumerate() {
                    if let Some(bytes) = self.phys.get(pfn) {
                        out.push((first + i as u64 * PAGE, bytes.clone()));
                    }
                }
            }
        }
        out
    }
}
