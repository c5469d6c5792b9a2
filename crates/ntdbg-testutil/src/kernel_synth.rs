//! A synthetic kernel-dump generator for tests: `PAGEDU64` full (DumpType 1), kernel (2) and
//! bitmap (5) dumps with valid headers, physical memory runs or bitmaps, and page tables
//! mapping known pages — x64 or ARM64 ([`Machine`]) — and `PAGEDUMP` (32-bit) full dumps with
//! x86 PAE or non-PAE page tables. Everything it writes is synthetic; no real system produced
//! it. [`KernelSynth::add_processes`] lays out processes and threads in its memory.
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

/// The processor (and so the header, CONTEXT and page-table format) the dump is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Machine {
    /// x64: `PAGEDU64`, 4-level page tables.
    X64,
    /// ARM64: `PAGEDU64`, 4-level translation tables with the 4 KiB granule.
    Arm64,
    /// 32-bit x86 with PAE: `PAGEDUMP` (full dumps only), 3-level page tables.
    X86Pae,
    /// 32-bit x86 without PAE: `PAGEDUMP` (full dumps only), 2-level page tables.
    X86,
}

impl Machine {
    /// `(shift, index mask)` of each level, root first.
    fn levels(self) -> &'static [(u32, u64)] {
        match self {
            Machine::X64 | Machine::Arm64 => &[(39, 0x1ff), (30, 0x1ff), (21, 0x1ff), (12, 0x1ff)],
            Machine::X86Pae => &[(30, 3), (21, 0x1ff), (12, 0x1ff)],
            Machine::X86 => &[(22, 0x3ff), (12, 0x3ff)],
        }
    }

    fn entry_size(self) -> u64 {
        if self == Machine::X86 {
            4
        } else {
            8
        }
    }

    fn is32(self) -> bool {
        matches!(self, Machine::X86Pae | Machine::X86)
    }

    /// An entry pointing at a lower-level table.
    fn table_entry(self, pa: u64) -> u64 {
        match self {
            // PAE page-directory-pointer entries have no writable bit.
            Machine::X86Pae => pa | 1,
            _ => pa | 3,
        }
    }

    /// A last-level entry mapping a 4 KiB page.
    fn page_entry(self, pa: u64) -> u64 {
        match self {
            // Valid, page, access flag.
            Machine::Arm64 => pa | 0x403,
            _ => pa | 3,
        }
    }

    /// An entry mapping a large page (block) at a higher level.
    fn large_entry(self, pa: u64) -> u64 {
        match self {
            // Valid, block (bit 1 clear), access flag.
            Machine::Arm64 => pa | 0x401,
            _ => pa | 0x83,
        }
    }

    fn header_size(self) -> u64 {
        if self.is32() {
            HEADER32_SIZE
        } else {
            HEADER_SIZE
        }
    }
}

/// Size of the 32-bit header.
pub const HEADER32_SIZE: u64 = 0x1000;

/// Builds a synthetic kernel dump.
#[derive(Debug, Clone)]
pub struct KernelSynth {
    layout: Layout,
    machine: Machine,
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
    /// The context's instruction pointer (rip, pc or eip).
    pub rip: u64,
    /// The context's stack pointer (rsp, sp or esp).
    pub rsp: u64,
    /// `PsLoadedModuleList`.
    pub ps_loaded_module_list: u64,
    /// `PsActiveProcessHead`.
    pub ps_active_process_head: u64,
    /// OS build written as MinorVersion.
    pub build: u32,
}

impl KernelSynth {
    /// An empty x64 dump with a page-table root.
    pub fn new(layout: Layout) -> KernelSynth {
        Self::for_machine(layout, Machine::X64)
    }

    /// An empty dump for `machine` with a page-table root. 32-bit machines support only
    /// [`Layout::Full`] (the generator writes `PAGEDUMP` full dumps).
    pub fn for_machine(layout: Layout, machine: Machine) -> KernelSynth {
        assert!(
            !machine.is32() || layout == Layout::Full,
            "the generator writes 32-bit dumps as full dumps only"
        );
        let mut s = KernelSynth {
            layout,
            machine,
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
            ps_active_process_head: 0,
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

    /// A second page-table root (another process's address space) starting as a copy of the
    /// current one, so it shares every mapping made so far (the kernel's). Returns its page
    /// frame number; [`KernelSynth::with_root`] maps pages in it.
    pub fn fork_root(&mut self) -> u64 {
        let copy = self.phys.get(&self.pml4).cloned().unwrap_or_default();
        let pfn = self.alloc();
        self.phys.insert(pfn, copy);
        pfn
    }

    /// Runs `f` with the page tables rooted at page `root` (from [`KernelSynth::fork_root`])
    /// as the ones mappings go into; the header keeps the original root. Addresses first
    /// written inside `f` should not be written again outside it.
    pub fn with_root<R>(&mut self, root: u64, f: impl FnOnce(&mut KernelSynth) -> R) -> R {
        let saved = std::mem::replace(&mut self.pml4, root);
        let out = f(self);
        self.pml4 = saved;
        out
    }

    /// The machine the dump is for.
    pub fn machine(&self) -> Machine {
        self.machine
    }

    fn page_mut(&mut self, pfn: u64) -> &mut Vec<u8> {
        self.phys
            .entry(pfn)
            .or_insert_with(|| vec![0; PAGE as usize])
    }

    fn entry(&self, table: u64, index: u64) -> u64 {
        let size = self.machine.entry_size() as usize;
        self.phys
            .get(&table)
            .map(|p| {
                let i = index as usize * size;
                let mut b = [0u8; 8];
                b[..size].copy_from_slice(&p[i..i + size]);
                u64::from_le_bytes(b)
            })
            .unwrap_or(0)
    }

    fn set_entry(&mut self, table: u64, index: u64, value: u64) {
        let size = self.machine.entry_size() as usize;
        let i = index as usize * size;
        self.page_mut(table)[i..i + size].copy_from_slice(&value.to_le_bytes()[..size]);
    }

    fn ensure_table(&mut self, table: u64, index: u64) -> u64 {
        let e = self.entry(table, index);
        if e & 1 != 0 {
            return (e & 0x000f_ffff_ffff_f000) / PAGE;
        }
        let child = self.alloc();
        let entry = self.machine.table_entry(child * PAGE);
        self.set_entry(table, index, entry);
        child
    }

    /// The table at level `depth` (0 = root) on the way to `va`, creating tables as needed.
    fn table_at(&mut self, va: u64, depth: usize) -> (u64, u64) {
        let levels = self.machine.levels();
        let index = |i: usize| (va >> levels[i].0) & levels[i].1;
        let mut table = self.pml4;
        for i in 0..depth {
            table = self.ensure_table(table, index(i));
        }
        (table, index(depth))
    }

    /// Maps the 4 KiB page at `va` to physical page `pfn` (creating tables as needed).
    pub fn map_4k(&mut self, va: u64, pfn: u64) {
        self.set_pte(va, self.machine.page_entry(pfn * PAGE));
        self.virt.insert(va & !(PAGE - 1), pfn);
    }

    /// Writes a raw last-level entry for `va` (e.g. a non-present transition or prototype PTE).
    pub fn set_pte(&mut self, va: u64, pte: u64) {
        let (table, index) = self.table_at(va, self.machine.levels().len() - 1);
        self.set_entry(table, index, pte);
    }

    /// Maps a large page at `va` to physical `pa` (both aligned to its size) in the page
    /// directory: 2 MiB (x64, ARM64, PAE) or 4 MiB (x86 without PAE).
    pub fn map_2m(&mut self, va: u64, pa: u64) {
        let (table, index) = self.table_at(va, self.machine.levels().len() - 2);
        let entry = self.machine.large_entry(pa);
        self.set_entry(table, index, entry);
    }

    /// Maps a 1 GiB huge page (block) at `va` (1 GiB aligned) to physical `pa` (1 GiB aligned);
    /// x64 and ARM64 only.
    pub fn map_1g(&mut self, va: u64, pa: u64) {
        assert!(!self.machine.is32(), "no 1 GiB pages on 32-bit x86");
        let (table, index) = self.table_at(va, 1);
        let entry = self.machine.large_entry(pa);
        self.set_entry(table, index, entry);
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

    /// Writes a pointer of the machine's size at `va`.
    fn write_ptr(&mut self, va: u64, value: u64) {
        let size = if self.machine.is32() { 4 } else { 8 };
        self.write_virtual(va, &value.to_le_bytes()[..size]);
    }

    /// Adds a `KLDR_DATA_TABLE_ENTRY` list (`PsLoadedModuleList`) holding these modules
    /// `(name, base, size, timestamp)`, each with a PE header at its base; 32- or 64-bit
    /// layout by machine.
    pub fn add_module_list(&mut self, list_va: u64, modules: &[(&str, u64, u32, u32)]) {
        let ptr = if self.machine.is32() { 4u64 } else { 8 };
        let entry_va = |i: usize| list_va + 0x100 + i as u64 * 0x200;
        let n = modules.len();
        let first = if n == 0 { list_va } else { entry_va(0) };
        let last = if n == 0 { list_va } else { entry_va(n - 1) };
        self.write_ptr(list_va, first);
        self.write_ptr(list_va + ptr, last);
        for (i, (name, base, size, ts)) in modules.iter().enumerate() {
            let e = entry_va(i);
            let next = if i + 1 < n { entry_va(i + 1) } else { list_va };
            let prev = if i == 0 { list_va } else { entry_va(i - 1) };
            self.write_ptr(e, next);
            self.write_ptr(e + ptr, prev);
            // DllBase after three LIST_ENTRYs, SizeOfImage after EntryPoint.
            self.write_ptr(e + 6 * ptr, *base);
            self.write_virtual(e + 8 * ptr, &size.to_le_bytes());
            let utf16: Vec<u8> = name.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
            let name_va = e + 0x100;
            self.write_virtual(name_va, &utf16);
            // FullDllName and BaseDllName: UNICODE_STRINGs of 2 pointers each.
            for us in [9 * ptr, 11 * ptr] {
                self.write_virtual(e + us, &(utf16.len() as u16).to_le_bytes());
                self.write_virtual(e + us + 2, &(utf16.len() as u16).to_le_bytes());
                self.write_ptr(e + us + ptr, name_va);
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

    /// The header (0x2000 bytes, or 0x1000 for 32-bit dumps).
    fn header(&self, runs: &[(u64, u64)]) -> Vec<u8> {
        if self.machine.is32() {
            return self.header32(runs);
        }
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
        put64(&mut h, 0x28, self.ps_active_process_head);
        let machine = if self.machine == Machine::Arm64 {
            0xaa64
        } else {
            0x8664
        };
        put32(&mut h, 0x30, machine);
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
        h[CONTEXT_OFFSET..CONTEXT_OFFSET + 0x4d0].fill(0);
        if self.machine == Machine::Arm64 {
            // CONTEXT (ARM64): flags, sp, pc.
            put32(&mut h, CONTEXT_OFFSET, 0x0040_0003);
            put64(&mut h, CONTEXT_OFFSET + 0x100, self.rsp);
            put64(&mut h, CONTEXT_OFFSET + 0x108, self.rip);
        } else {
            // CONTEXT_AMD64: flags, segments, rsp, rip.
            put32(&mut h, CONTEXT_OFFSET + 0x30, 0x0010_001f);
            put32(&mut h, CONTEXT_OFFSET + 0x34, 0x1f80);
            h[CONTEXT_OFFSET + 0x38..CONTEXT_OFFSET + 0x3a].copy_from_slice(&0x10u16.to_le_bytes());
            h[CONTEXT_OFFSET + 0x42..CONTEXT_OFFSET + 0x44].copy_from_slice(&0x18u16.to_le_bytes());
            put64(&mut h, CONTEXT_OFFSET + 0x98, self.rsp);
            put64(&mut h, CONTEXT_OFFSET + 0xf8, self.rip);
        }
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

    /// The 32-bit `DUMP_HEADER32` (0x1000 bytes) of a full dump.
    fn header32(&self, runs: &[(u64, u64)]) -> Vec<u8> {
        let mut h = b"PAGE".repeat((HEADER32_SIZE / 4) as usize);
        let put32 = |h: &mut Vec<u8>, off: usize, v: u64| {
            h[off..off + 4].copy_from_slice(&(v as u32).to_le_bytes())
        };
        h[..8].copy_from_slice(b"PAGEDUMP");
        put32(&mut h, 0x08, 0xf);
        put32(&mut h, 0x0c, u64::from(self.build));
        put32(&mut h, 0x10, self.dtb());
        put32(&mut h, 0x14, 0);
        put32(&mut h, 0x18, self.ps_loaded_module_list);
        put32(&mut h, 0x1c, self.ps_active_process_head);
        put32(&mut h, 0x20, 0x14c);
        put32(&mut h, 0x24, 1);
        put32(&mut h, 0x28, u64::from(self.bugcheck_code));
        for (i, p) in self.bugcheck_parameters.iter().enumerate() {
            put32(&mut h, 0x2c + i * 4, *p);
        }
        // PaeEnabled (a byte), KdSecondaryVersion, spare.
        h[0x5c..0x60].copy_from_slice(&[u8::from(self.machine == Machine::X86Pae), 0, 0, 0]);
        put32(&mut h, 0x60, 0);
        put32(&mut h, 0x64, runs.len() as u64);
        put32(&mut h, 0x68, runs.iter().map(|r| r.1).sum());
        for (i, (b, c)) in runs.iter().enumerate().take(86) {
            put32(&mut h, 0x6c + i * 8, *b);
            put32(&mut h, 0x70 + i * 8, *c);
        }
        // CONTEXT (x86): flags, ebp, eip, cs, eflags, esp, ss.
        const CTX: usize = 0x320;
        h[CTX..CTX + 0x2cc].fill(0);
        put32(&mut h, CTX, 0x0001_0007);
        put32(&mut h, CTX + 0xb8, self.rip);
        put32(&mut h, CTX + 0xbc, 8);
        put32(&mut h, CTX + 0xc0, 0x202);
        put32(&mut h, CTX + 0xc4, self.rsp);
        put32(&mut h, CTX + 0xc8, 0x10);
        // EXCEPTION_RECORD32: the bugcheck breakpoint.
        h[0x7d0..0x820].fill(0);
        put32(&mut h, 0x7d0, 0x8000_0003);
        put32(&mut h, 0x7dc, self.rip);
        put32(&mut h, 0xf88, 1);
        h[0xfc0..0xfc8].copy_from_slice(&0x01d7_07f2_3dbb_3399u64.to_le_bytes());
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
            Layout::Full => {
                self.machine.header_size() + self.runs().iter().map(|r| r.1).sum::<u64>() * PAGE
            }
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
                let mut offset = self.machine.header_size();
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

/// Field offsets the generator lays kernel processes and threads out with. A test chooses
/// them (they stand in for the kernel PDB's `_EPROCESS`/`_ETHREAD`/`_KSWITCH_FRAME`); the
/// generator never reads a real layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectOffsets {
    /// `_EPROCESS.Pcb.DirectoryTableBase`.
    pub process_directory_table_base: u64,
    /// `_EPROCESS.ActiveProcessLinks`.
    pub process_links: u64,
    /// `_EPROCESS.UniqueProcessId`.
    pub process_id: u64,
    /// `_EPROCESS.InheritedFromUniqueProcessId`.
    pub process_parent_id: u64,
    /// `_EPROCESS.Peb`.
    pub process_peb: u64,
    /// `_EPROCESS.ImageFileName` (15 bytes).
    pub process_image: u64,
    /// `_EPROCESS.ThreadListHead`.
    pub process_thread_list: u64,
    /// `_ETHREAD.ThreadListEntry`.
    pub thread_list_entry: u64,
    /// `_ETHREAD.Cid`.
    pub thread_cid: u64,
    /// `_ETHREAD.Tcb.Teb`.
    pub thread_teb: u64,
    /// `_ETHREAD.Win32StartAddress`.
    pub thread_start_address: u64,
    /// `_ETHREAD.Tcb.State` (a byte).
    pub thread_state: u64,
    /// `_ETHREAD.Tcb.WaitReason` (a byte).
    pub thread_wait_reason: u64,
    /// `_ETHREAD.Tcb.InitialStack`.
    pub thread_initial_stack: u64,
    /// `_ETHREAD.Tcb.StackBase`.
    pub thread_stack_base: u64,
    /// `_ETHREAD.Tcb.StackLimit`.
    pub thread_stack_limit: u64,
    /// `_ETHREAD.Tcb.KernelStack`.
    pub thread_kernel_stack: u64,
    /// `_ETHREAD.Tcb.Process`.
    pub thread_process: u64,
    /// `_KSWITCH_FRAME.Rbp`.
    pub switch_rbp: u64,
    /// `_KSWITCH_FRAME.Return`.
    pub switch_return: u64,
    /// Size of `_KSWITCH_FRAME`.
    pub switch_size: u64,
}

impl ObjectOffsets {
    /// Offsets shaped like an x64 Windows 10 kernel's (any consistent table would do).
    pub fn x64_sample() -> ObjectOffsets {
        ObjectOffsets {
            process_directory_table_base: 0x28,
            process_links: 0x448,
            process_id: 0x440,
            process_parent_id: 0x540,
            process_peb: 0x550,
            process_image: 0x5a8,
            process_thread_list: 0x5e0,
            thread_list_entry: 0x4e8,
            thread_cid: 0x478,
            thread_teb: 0xf0,
            thread_start_address: 0x4d0,
            thread_state: 0x184,
            thread_wait_reason: 0x283,
            thread_initial_stack: 0x28,
            thread_stack_base: 0x38,
            thread_stack_limit: 0x30,
            thread_kernel_stack: 0x58,
            thread_process: 0x220,
            switch_rbp: 0x30,
            switch_return: 0x38,
            switch_size: 0x40,
        }
    }
}

/// A thread [`KernelSynth::add_processes`] lays out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthThread {
    /// Thread id.
    pub tid: u64,
    /// `KTHREAD_STATE` (2 running, 5 waiting).
    pub state: u8,
    /// `KWAIT_REASON`.
    pub wait_reason: u8,
    /// `Win32StartAddress`.
    pub start_address: u64,
    /// `KernelStack`: where the generator writes the thread's switch frame.
    pub kernel_stack: u64,
    /// The switch frame's return address (where the thread resumes).
    pub resume_at: u64,
    /// The switch frame's saved rbp.
    pub rbp: u64,
}

/// A process [`KernelSynth::add_processes`] lays out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthProcess {
    /// Process id.
    pub pid: u64,
    /// Parent process id.
    pub parent_pid: u64,
    /// Image file name (at most 15 bytes are kept).
    pub image: String,
    /// `DirectoryTableBase`.
    pub directory_table_base: u64,
    /// `Peb`.
    pub peb: u64,
    /// The threads.
    pub threads: Vec<SynthThread>,
}

/// Where [`KernelSynth::add_processes`] put each object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectAddresses {
    /// Each process's `_EPROCESS` address, in order.
    pub processes: Vec<u64>,
    /// Each process's `_ETHREAD` addresses, in order.
    pub threads: Vec<Vec<u64>>,
}

impl KernelSynth {
    fn write_u64(&mut self, va: u64, v: u64) {
        self.write_virtual(va, &v.to_le_bytes());
    }

    /// Links `entries` (addresses of `LIST_ENTRY`s) into a circular list headed at `head`.
    fn link_list(&mut self, head: u64, entries: &[u64]) {
        let all: Vec<u64> = std::iter::once(head)
            .chain(entries.iter().copied())
            .collect();
        for (i, &e) in all.iter().enumerate() {
            let next = all[(i + 1) % all.len()];
            let prev = all[(i + all.len() - 1) % all.len()];
            self.write_u64(e, next);
            self.write_u64(e + 8, prev);
        }
    }

    /// Lays out `processes` (x64 pointers) with `offsets`: `_EPROCESS`es 4 KiB apart from
    /// `base_va`, their `_ETHREAD`s from `base_va + 0x10_0000`, each thread's switch frame at
    /// its `kernel_stack`, all linked from `PsActiveProcessHead` at `head_va` (written to the
    /// header).
    pub fn add_processes(
        &mut self,
        head_va: u64,
        base_va: u64,
        offsets: &ObjectOffsets,
        processes: &[SynthProcess],
    ) -> ObjectAddresses {
        let o = offsets;
        let mut out = ObjectAddresses {
            processes: Vec::new(),
            threads: Vec::new(),
        };
        let mut next_thread = base_va + 0x10_0000;
        for (i, p) in processes.iter().enumerate() {
            let eprocess = base_va + i as u64 * 0x1000;
            self.write_u64(
                eprocess + o.process_directory_table_base,
                p.directory_table_base,
            );
            self.write_u64(eprocess + o.process_id, p.pid);
            self.write_u64(eprocess + o.process_parent_id, p.parent_pid);
            self.write_u64(eprocess + o.process_peb, p.peb);
            let mut name = [0u8; 15];
            let bytes = p.image.as_bytes();
            let n = bytes.len().min(15);
            name[..n].copy_from_slice(&bytes[..n]);
            self.write_virtual(eprocess + o.process_image, &name);
            let mut threads = Vec::new();
            for t in &p.threads {
                let ethread = next_thread;
                next_thread += 0x1000;
                self.write_u64(ethread + o.thread_cid, p.pid);
                self.write_u64(ethread + o.thread_cid + 8, t.tid);
                self.write_u64(ethread + o.thread_teb, 0);
                self.write_u64(ethread + o.thread_start_address, t.start_address);
                self.write_virtual(ethread + o.thread_state, &[t.state]);
                self.write_virtual(ethread + o.thread_wait_reason, &[t.wait_reason]);
                let initial = (t.kernel_stack | 0xfff) + 1 - 0x30;
                self.write_u64(ethread + o.thread_initial_stack, initial);
                self.write_u64(ethread + o.thread_stack_base, (t.kernel_stack | 0xfff) + 1);
                self.write_u64(ethread + o.thread_stack_limit, t.kernel_stack & !0x5fff);
                self.write_u64(ethread + o.thread_kernel_stack, t.kernel_stack);
                self.write_u64(ethread + o.thread_process, eprocess);
                self.write_u64(t.kernel_stack + o.switch_rbp, t.rbp);
                self.write_u64(t.kernel_stack + o.switch_return, t.resume_at);
                // The stack above the frame is mapped, so a walk has memory to read.
                self.write_virtual(t.kernel_stack + o.switch_size, &[0; 0x40]);
                threads.push(ethread);
            }
            let entries: Vec<u64> = threads.iter().map(|t| t + o.thread_list_entry).collect();
            self.link_list(eprocess + o.process_thread_list, &entries);
            out.processes.push(eprocess);
            out.threads.push(threads);
        }
        let links: Vec<u64> = out.processes.iter().map(|p| p + o.process_links).collect();
        self.link_list(head_va, &links);
        self.ps_active_process_head = head_va;
        out
    }
}

/// `IMAGE_FILE_MACHINE_ARMNT`: 32-bit ARM (Thumb-2), Windows RT.
pub const MACHINE_ARMNT: u32 = 0x1c4;

/// A 32-bit small memory dump (`PAGEDUMP`, DumpType 4) for `machine`
/// (`IMAGE_FILE_MACHINE_*`): the header with the bugcheck and its breakpoint exception
/// record, then a `TRIAGE_DUMP32` whose driver list holds `drivers` as
/// `(name, base, size, timestamp)` (`DUMP_DRIVER_ENTRY32`: the name offset, then a 32-bit
/// `KLDR_DATA_TABLE_ENTRY`; names are `DUMP_STRING`s). No memory, stack or context.
pub fn small_dump32(
    machine: u32,
    bugcheck_code: u32,
    parameters: [u32; 4],
    drivers: &[(&str, u32, u32, u32)],
) -> Vec<u8> {
    const TRIAGE: usize = HEADER32_SIZE as usize;
    const ENTRY: usize = 0x4c;
    let put = |b: &mut Vec<u8>, off: usize, v: u32| {
        if b.len() < off + 4 {
            b.resize(off + 4, 0);
        }
        b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    };
    let mut b = b"PAGE".repeat(TRIAGE / 4);
    b[..8].copy_from_slice(b"PAGEDUMP");
    put(&mut b, 0x08, 0xf);
    put(&mut b, 0x0c, 9600);
    put(&mut b, 0x20, machine);
    put(&mut b, 0x24, 1);
    put(&mut b, 0x28, bugcheck_code);
    for (i, p) in parameters.iter().enumerate() {
        put(&mut b, 0x2c + i * 4, *p);
    }
    // EXCEPTION_RECORD32: the bugcheck breakpoint.
    b[0x7d0..0x820].fill(0);
    put(&mut b, 0x7d0, 0x8000_0003);
    put(&mut b, 0xf88, 4);
    b[0xfc0..0xfc8].copy_from_slice(&0x01d7_07f2_3dbb_3399u64.to_le_bytes());
    // TRIAGE_DUMP32: the driver list right after its 0x68-byte header, then the names.
    let list = TRIAGE + 0x68;
    let mut pool = list + drivers.len() * ENTRY;
    b.resize(pool, 0);
    put(&mut b, TRIAGE + 0x30, list as u32);
    put(&mut b, TRIAGE + 0x34, drivers.len() as u32);
    put(&mut b, TRIAGE + 0x38, pool as u32);
    for (i, (name, base, size, timestamp)) in drivers.iter().enumerate() {
        let entry = list + i * ENTRY;
        put(&mut b, entry, pool as u32);
        put(&mut b, entry + 4 + 0x18, *base);
        put(&mut b, entry + 4 + 0x20, *size);
        put(&mut b, entry + 4 + 0x44, *timestamp);
        let units: Vec<u16> = name.encode_utf16().collect();
        let mut string = (units.len() as u32).to_le_bytes().to_vec();
        string.extend(units.iter().flat_map(|u| u.to_le_bytes()));
        string.extend([0, 0]);
        b.extend_from_slice(&string);
        pool += string.len();
    }
    put(
        &mut b,
        TRIAGE + 0x3c,
        (pool - (list + drivers.len() * ENTRY)) as u32,
    );
    let size = b.len() as u32;
    put(&mut b, TRIAGE + 0x04, size);
    b
}
