//! Unwinding with the image's own unwind tables (`.pdata`/`.xdata`), for modules whose symbol
//! file has no `STACK CFI`/`STACK WIN` record at the address.
//!
//! - x64: framehop's PE unwinder, fed the mapped image, for addresses an entry covers (leaf
//!   functions, which have none, are the stack walker's: it validates their return address).
//!   Before framehop runs, the
//!   `RUNTIME_FUNCTION` covering the address and its whole `UNWIND_INFO` chain are checked to be
//!   present in the image; when they are not (a dump with holes), no answer is given, so the
//!   caller falls back to frame-pointer or scanning with the right trust instead of getting a
//!   guess dressed up as CFI.
//! - ARM64: [`ntdbg_formats::unwind_arm64`] (framehop 0.16 has no ARM64 PE unwinder).
//!
//! Registers restored: x64 `rip`, `rsp` and the non-volatile integer registers (`rbx`, `rbp`,
//! `rsi`, `rdi`, `r12`–`r15`); ARM64 `pc`, `sp`, `fp`, `lr` and `x19`–`x28`.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use breakpad_symbols::FrameWalker;
use framehop::x86_64::{CacheX86_64, Reg, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{FrameAddress, ModuleSectionInfo, Unwinder};
use ntdbg_formats::pe::pdata::{
    lookup_x64, read_runtime_functions_arm64, read_runtime_functions_x64, RuntimeFunctionArm64,
    RuntimeFunctionX64, UnwindInfoX64,
};
use ntdbg_formats::pe::Machine;

use crate::image::MappedImage;
use crate::SharedBytes;

/// Longest `UNWIND_INFO` chain followed.
const MAX_CHAIN: usize = 32;

/// x64 non-volatile registers: walker name and framehop register.
const X64_NONVOLATILE: [(&str, Reg); 8] = [
    ("rbx", Reg::RBX),
    ("rbp", Reg::RBP),
    ("rsi", Reg::RSI),
    ("rdi", Reg::RDI),
    ("r12", Reg::R12),
    ("r13", Reg::R13),
    ("r14", Reg::R14),
    ("r15", Reg::R15),
];

/// x64 register numbers as `UNWIND_INFO` encodes them.
const X64_BY_NUMBER: [&str; 16] = [
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15",
];

/// The unwind tables of one module.
pub(crate) struct PeUnwinder {
    image: Arc<MappedImage>,
    arch: Arch,
}

enum Arch {
    X64 {
        functions: Vec<RuntimeFunctionX64>,
        unwinder: Box<UnwinderX86_64<SharedBytes>>,
        cache: Mutex<CacheX86_64>,
    },
    Arm64 {
        functions: Vec<RuntimeFunctionArm64>,
    },
}

impl std::fmt::Debug for PeUnwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (arch, count) = match &self.arch {
            Arch::X64 { functions, .. } => ("x64", functions.len()),
            Arch::Arm64 { functions } => ("arm64", functions.len()),
        };
        f.debug_struct("PeUnwinder")
            .field("arch", &arch)
            .field("functions", &count)
            .field("source", &self.image.source)
            .finish()
    }
}

/// framehop's view of the image: `.pdata` is the cleaned entry list, and both the unwind data
/// and the code are the whole image (RVA = offset; base SVMA 0).
struct Sections {
    pdata: SharedBytes,
    image: SharedBytes,
}

impl ModuleSectionInfo<SharedBytes> for Sections {
    fn base_svma(&self) -> u64 {
        0
    }
    fn section_svma_range(&mut self, name: &[u8]) -> Option<Range<u64>> {
        match name {
            b".pdata" => Some(0..self.pdata.len() as u64),
            b".rdata" | b".text" => Some(0..self.image.len() as u64),
            _ => None,
        }
    }
    fn section_data(&mut self, name: &[u8]) -> Option<SharedBytes> {
        match name {
            b".pdata" => Some(self.pdata.clone()),
            b".rdata" | b".text" => Some(self.image.clone()),
            _ => None,
        }
    }
}

/// The exception directory as framehop needs it: entries valid and sorted. A clean directory
/// (the usual case) is lent from the image as it is; otherwise `functions`, the entries kept
/// and sorted, are written out again.
fn clean_pdata_x64(
    image: &SharedBytes,
    rva: usize,
    pdata: &[u8],
    functions: &[RuntimeFunctionX64],
) -> SharedBytes {
    let begins = pdata
        .chunks_exact(12)
        .map(|e| u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
    if functions.len() * 12 == pdata.len() && begins.is_sorted() {
        if let Some(lent) = image.slice(rva..rva + pdata.len()) {
            return lent;
        }
    }
    let cleaned: Vec<u8> = functions
        .iter()
        .flat_map(|f| {
            [f.begin, f.end, f.unwind_info]
                .into_iter()
                .flat_map(u32::to_le_bytes)
        })
        .collect();
    cleaned.into()
}

impl PeUnwinder {
    /// Unwind tables for an image loaded at `base`; `None` when the image has no usable
    /// exception directory or is not x64/ARM64.
    pub fn new(image: Arc<MappedImage>, base: u64) -> Option<PeUnwinder> {
        let dir = image.info.exception_directory?;
        if !image.is_valid(dir.rva, dir.size) {
            return None;
        }
        let pdata = image
            .bytes
            .get(dir.rva as usize..)?
            .get(..dir.size as usize)?;
        let size = image.info.size_of_image.min(image.bytes.len() as u32);
        let arch = match image.info.machine {
            Machine::X64 => {
                let functions = read_runtime_functions_x64(pdata, size);
                if functions.is_empty() {
                    return None;
                }
                let mut unwinder = UnwinderX86_64::new();
                let sections = Sections {
                    pdata: clean_pdata_x64(&image.bytes, dir.rva as usize, pdata, &functions),
                    image: image.bytes.clone(),
                };
                let end = base.checked_add(u64::from(size))?;
                unwinder.add_module(framehop::Module::new(
                    String::new(),
                    base..end,
                    base,
                    sections,
                ));
                Arch::X64 {
                    functions,
                    unwinder: Box::new(unwinder),
                    cache: Mutex::new(CacheX86_64::new()),
                }
            }
            Machine::Arm64 => {
                let functions = read_runtime_functions_arm64(pdata, size);
                if functions.is_empty() {
                    return None;
                }
                Arch::Arm64 { functions }
            }
            _ => return None,
        };
        Some(PeUnwinder { image, arch })
    }

    /// Whether the unwind tables describe a function containing `rva`. Every function that
    /// calls another has an entry, so a return address outside all of them is not one.
    /// (ARM64: always true, its tables are not indexed this way yet.)
    pub fn covers(&self, rva: u64) -> bool {
        match &self.arch {
            Arch::X64 { functions, .. } => u32::try_from(rva)
                .ok()
                .is_some_and(|r| lookup_x64(functions, r).is_some()),
            Arch::Arm64 { .. } => true,
        }
    }

    /// Whether an entry of the unwind tables covers `rva` (ARM64: within the function
    /// length its `.pdata`/`.xdata` give). Where none does, the code is a leaf function.
    pub fn has_entry(&self, rva: u64) -> bool {
        match &self.arch {
            Arch::X64 { .. } => self.covers(rva),
            Arch::Arm64 { functions } => u32::try_from(rva).ok().is_some_and(|r| {
                crate::unwind_arm64::entry_for(&self.image, functions, r).is_some()
            }),
        }
    }

    /// Where the unwind tables came from.
    pub fn image(&self) -> &MappedImage {
        &self.image
    }

    /// Unwinds one frame of the module loaded at `base`.
    pub fn walk(&self, base: u64, walker: &mut dyn FrameWalker) -> Option<()> {
        match &self.arch {
            Arch::X64 {
                functions,
                unwinder,
                cache,
            } => self.walk_x64(base, functions, unwinder, cache, walker),
            Arch::Arm64 { functions } => {
                crate::unwind_arm64::walk(&self.image, functions, base, walker)
            }
        }
    }

    fn walk_x64(
        &self,
        base: u64,
        functions: &[RuntimeFunctionX64],
        unwinder: &UnwinderX86_64<SharedBytes>,
        cache: &Mutex<CacheX86_64>,
        walker: &mut dyn FrameWalker,
    ) -> Option<()> {
        let ip = walker.get_instruction();
        let rva = u32::try_from(ip.checked_sub(base)?).ok()?;
        let first = !walker.has_grand_callee();
        // No entry: a leaf function, which the stack walker unwinds itself (the return
        // address at `[rsp]` must follow a call), or not code at all.
        let frame_register = self.check_chain_x64(lookup_x64(functions, rva)?)?;
        if frame_register != 0
            && walker
                .get_callee_register(X64_BY_NUMBER[usize::from(frame_register & 15)])
                .is_none()
        {
            return None;
        }
        let sp = walker.get_callee_register("rsp")?;
        let rip = walker.get_callee_register("rip").unwrap_or(ip);
        let mut regs = UnwindRegsX86_64::new(rip, sp, 0);
        let mut known = [false; 8];
        for (i, (name, reg)) in X64_NONVOLATILE.iter().enumerate() {
            if let Some(v) = walker.get_callee_register(name) {
                regs.set(*reg, v);
                known[i] = true;
            }
        }
        let before = regs;
        let address = if first {
            FrameAddress::from_instruction_pointer(ip)
        } else {
            FrameAddress::from_return_address(ip.checked_add(1)?)?
        };
        let result = {
            let reader: &dyn FrameWalker = walker;
            let mut read = |addr: u64| reader.get_register_at_address(addr).ok_or(());
            let mut cache = cache.lock().ok()?;
            catch_unwind(AssertUnwindSafe(|| {
                unwinder.unwind_frame(address, &mut regs, &mut cache, &mut read)
            }))
        };
        let ra = result.ok()?.ok()??;
        walker.set_cfa(regs.sp())?;
        walker.set_ra(ra)?;
        for (i, (name, reg)) in X64_NONVOLATILE.iter().enumerate() {
            let v = regs.get(*reg);
            if known[i] || v != before.get(*reg) {
                walker.set_caller_register(name, v);
            }
        }
        Some(())
    }

    /// Checks that `f`'s `UNWIND_INFO` and every chained one are really in the image;
    /// returns the frame register of the first.
    fn check_chain_x64(&self, f: &RuntimeFunctionX64) -> Option<u8> {
        let mut at = f.unwind_info;
        let mut frame_register = None;
        for _ in 0..MAX_CHAIN {
            let info = UnwindInfoX64::parse(self.image.at(at)?).ok()?;
            if !self.image.is_valid(at, info.len as u32) {
                return None;
            }
            frame_register.get_or_insert(info.frame_register);
            match info.chained {
                Some(next) => at = next.unwind_info,
                None => return frame_register,
            }
        }
        None
    }
}
