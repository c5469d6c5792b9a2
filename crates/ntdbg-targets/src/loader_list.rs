//! The modules of a live Windows process, read from its PEB loader list in memory (what a
//! debugger attached over the GDB remote protocol to `winedbg --gdb` must do: the stub does
//! not list Windows modules).
//!
//! The x64 layout of [`UserLayout`]: TEB → PEB → Ldr → InLoadOrderModuleList, a `LIST_ENTRY`
//! head; each entry starts with its own links and holds DllBase, SizeOfImage and FullDllName.
//! The image's own PE header gives the TimeDateStamp and CheckSum, so symbols are found as for
//! a dump.

use crate::memory::MemoryView;
use crate::user_layout::UserLayout;
use crate::Arch;
use minidump::MinidumpModule;

/// The layout the live stubs' processes have (x64).
fn layout() -> &'static UserLayout {
    UserLayout::of(Arch::X64)
}
/// Most modules read (a corrupt list could loop without returning to its head).
const MAX_MODULES: usize = 4096;
/// Longest module path read, in bytes.
const MAX_NAME_BYTES: usize = 2 * 1024;

/// The modules of the x64 process whose TEB is at `teb`; `None` when the loader list cannot
/// be read.
pub(crate) fn modules_from_teb(mem: &dyn MemoryView, teb: u64) -> Option<Vec<MinidumpModule>> {
    let l = layout();
    let peb = mem.read_uint(teb.checked_add(l.teb.peb)?, 8)?;
    let ldr = mem.read_uint(peb.checked_add(l.peb.ldr)?, 8)?;
    let head = ldr.checked_add(l.ldr.in_load_order)?;
    let mut entry = mem.read_uint(head, 8)?;
    let mut modules = Vec::new();
    while entry != head && entry != 0 && modules.len() < MAX_MODULES {
        if let Some(m) = module_at(mem, entry) {
            modules.push(m);
        }
        entry = mem.read_uint(entry, 8)?;
    }
    Some(modules)
}

fn module_at(mem: &dyn MemoryView, entry: u64) -> Option<MinidumpModule> {
    let l = &layout().ldr;
    let base = mem.read_uint(entry.checked_add(l.entry_dll_base)?, 8)?;
    let size = u32::try_from(mem.read_uint(entry.checked_add(l.entry_size_of_image)?, 4)?).ok()?;
    if base == 0 || size == 0 {
        return None;
    }
    let name =
        unicode_string(mem, entry + l.entry_full_name).unwrap_or_else(|| format!("{base:#x}"));
    let mut module = MinidumpModule::new(base, size, &name);
    if let Some((stamp, checksum)) = pe_stamp(mem, base) {
        module.raw.time_date_stamp = stamp;
        module.raw.checksum = checksum;
    }
    Some(module)
}

/// A UNICODE_STRING (Length, MaximumLength, Buffer) and its text.
fn unicode_string(mem: &dyn MemoryView, at: u64) -> Option<String> {
    let len = (mem.read_uint(at, 2)? as usize).min(MAX_NAME_BYTES);
    let buffer = mem.read_uint(at.checked_add(layout().unicode_buffer)?, 8)?;
    let bytes = mem.read_exact(buffer, len)?;
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    Some(String::from_utf16_lossy(&units)).filter(|s| !s.is_empty())
}

/// TimeDateStamp and CheckSum from the PE header of the image mapped at `base`.
fn pe_stamp(mem: &dyn MemoryView, base: u64) -> Option<(u32, u32)> {
    if mem.read_uint(base, 2)? != 0x5a4d {
        return None;
    }
    let nt = base.checked_add(mem.read_uint(base + 0x3c, 4)?)?;
    if mem.read_uint(nt, 4)? != 0x4550 {
        return None;
    }
    let stamp = mem.read_uint(nt + 8, 4)? as u32;
    // OptionalHeader at nt+0x18; CheckSum at +0x40 in both PE32 and PE32+.
    let checksum = mem.read_uint(nt + 0x18 + 0x40, 4)? as u32;
    Some((stamp, checksum))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use std::collections::BTreeMap;

    /// Sparse little-endian memory for building a fake process.
    #[derive(Default)]
    struct Mem(BTreeMap<u64, u8>);

    impl Mem {
        fn put(&mut self, at: u64, bytes: &[u8]) {
            for (i, b) in bytes.iter().enumerate() {
                self.0.insert(at + i as u64, *b);
            }
        }
        fn put64(&mut self, at: u64, v: u64) {
            self.put(at, &v.to_le_bytes());
        }
    }

    impl MemoryView for Mem {
        fn read_chunk(&self, addr: u64, max: usize) -> Option<Cow<'_, [u8]>> {
            let bytes: Vec<u8> = (0..max as u64)
                .map_while(|i| self.0.get(&(addr + i)).copied())
                .collect();
            (!bytes.is_empty()).then_some(Cow::Owned(bytes))
        }
        fn regions(&self) -> Vec<crate::MemoryRegion> {
            Vec::new()
        }
    }

    #[test]
    fn walks_the_loader_list_and_reads_pe_stamps() {
        let mut m = Mem::default();
        let (teb, peb, ldr, e1, e2, name) = (0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000);
        m.put64(teb + 0x60, peb);
        m.put64(peb + 0x18, ldr);
        let head = ldr + 0x10;
        m.put64(head, e1);
        m.put64(e1, e2);
        m.put64(e2, head);
        for (e, base) in [(e1, 0x1_4000_0000u64), (e2, 0x7ff0_0000_0000)] {
            m.put64(e + 0x30, base);
            m.put64(e + 0x40, 0x9000);
            m.put(e + 0x48, &[16, 0, 18, 0, 0, 0, 0, 0]);
            m.put64(e + 0x50, name);
        }
        let text: Vec<u8> = "C:\\a.exe"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        m.put(name, &text);
        // A PE header for the first image only.
        m.put(0x1_4000_0000, b"MZ");
        m.put(0x1_4000_003c, &0x80u32.to_le_bytes());
        m.put(0x1_4000_0080, b"PE\0\0");
        m.put(0x1_4000_0088, &0x6000_0001u32.to_le_bytes());
        m.put(0x1_4000_0080 + 0x58, &0x1234u32.to_le_bytes());
        let mods = modules_from_teb(&m, teb).unwrap();
        assert_eq!(mods.len(), 2);
        assert_eq!(mods[0].name, "C:\\a.exe");
        assert_eq!(mods[0].raw.base_of_image, 0x1_4000_0000);
        assert_eq!(mods[0].raw.size_of_image, 0x9000);
        assert_eq!(mods[0].raw.time_date_stamp, 0x6000_0001);
        assert_eq!(mods[0].raw.checksum, 0x1234);
        assert_eq!(mods[1].raw.time_date_stamp, 0);
        // A list that loops without returning to its head stops at the limit.
        m.put64(e2, e1);
        assert_eq!(modules_from_teb(&m, teb).unwrap().len(), MAX_MODULES);
        // No PEB: no list.
        assert!(modules_from_teb(&m, 0x9_0000).is_none());
    }
}
