//! Unwinding with the image's own unwind tables (`.pdata`/`.xdata`), for modules whose symbol
//! file has no `STACK CFI`/`STACK WIN` record at the address.
//!
//! - x64: framehop's PE unwinder for addresses an entry covers (leaf functions, which have
//!   none, are the stack walker's: it validates their return address), fed per frame only
//!   what it reads: the `.pdata` table (read once), the `UNWIND_INFO` chain and, for the
//!   innermost frame, the code from the address to the function's end (epilogue detection).
//!   Before framehop runs, the
//!   `RUNTIME_FUNCTION` covering the address and its whole `UNWIND_INFO` chain are checked to be
//!   present in the image; when they are not (a dump with holes), no answer is given, so the
//!   caller falls back to frame-pointer or scanning with the right trust instead of getting a
//!   guess dressed up as CFI.
//! - ARM64: [`ntdbg_formats::unwind_arm64`] (framehop 0.16 has no ARM64 PE unwinder).
//!
//! Registers restored: x64 `rip`, `rsp` and the non-volatile integer registers (`rbx`, `rbp`,
//! `rsi`, `rdi`, `r12`–`r15`); ARM64 `pc`, `sp`, `fp`, `lr` and `x19`–`x28`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use breakpad_symbols::FrameWalker;
use framehop::x86_64::{CacheX86_64, Reg, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{FrameAddress, ModuleSectionInfo, Unwinder};
use ntdbg_formats::pe::pdata::{
    lookup_x64, read_runtime_functions_arm64, read_runtime_functions_x64, RuntimeFunctionArm64,
    RuntimeFunctionX64, UnwindInfoX64,
};
use ntdbg_formats::pe::Machine;

use crate::image::{ImageSource, MappedImage};
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

/// Caller-frame unwinders kept per thread (see [`KeptUnwinder`]).
const KEPT_UNWINDERS: usize = 16;

/// Numbers every [`PeUnwinder`] apart for the kept unwinders (an address can be reused).
static NEXT_UNWINDER: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's most recently used caller-frame unwinders, newest first. Per thread, so
    /// threads walking the same module (triage, MCP sessions) neither wait for each other nor
    /// build the same unwinder twice; each holds its frame's `.pdata` and `UNWIND_INFO`
    /// bytes, so at most [`KEPT_UNWINDERS`] of them outlive their module.
    static KEPT: RefCell<VecDeque<KeptUnwinder>> = const { RefCell::new(VecDeque::new()) };
}

/// The unwind tables of one module.
pub(crate) struct PeUnwinder {
    image: Arc<MappedImage>,
    arch: Arch,
    /// This unwinder's number, which its kept caller-frame unwinders carry.
    id: u64,
}

/// A framehop unwinder for one function's caller frames (not the innermost frame, whose
/// unwinder also holds the code from its address on) with its own rule cache: a recursion,
/// and every dump of one build, unwind through the same functions again, and building an
/// unwinder and a cache per frame cost more than the unwinding. A cache is only ever used
/// with its own unwinder, whose modules never change, so framehop's module generation in
/// its entries always matches (a cache shared between per-frame unwinders never hits, and
/// could hit a stale rule once framehop's 16-bit generation wraps).
struct KeptUnwinder {
    /// The [`PeUnwinder`] it was built by.
    owner: u64,
    /// Where the module is loaded.
    base: u64,
    /// The function's `RUNTIME_FUNCTION` begin RVA.
    begin: u32,
    unwinder: UnwinderX86_64<SharedBytes>,
    cache: CacheX86_64,
}

enum Arch {
    X64 {
        functions: Vec<RuntimeFunctionX64>,
        /// The cleaned `.pdata` table framehop searches.
        pdata: SharedBytes,
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

/// framehop's view of the image for one frame: `.pdata` is the cleaned entry list, `.rdata`
/// the bytes of one `UNWIND_INFO` chain and `.text` the code from the frame's address to its
/// function's end (innermost frame only), each at its RVA (base SVMA 0).
struct FrameSections {
    pdata: SharedBytes,
    unwind_info: (Range<u32>, SharedBytes),
    code: Option<(Range<u32>, SharedBytes)>,
}

impl ModuleSectionInfo<SharedBytes> for FrameSections {
    fn base_svma(&self) -> u64 {
        0
    }
    fn section_svma_range(&mut self, name: &[u8]) -> Option<Range<u64>> {
        let range = match name {
            b".pdata" => return Some(0..self.pdata.len() as u64),
            b".rdata" => &self.unwind_info.0,
            b".text" => &self.code.as_ref()?.0,
            _ => return None,
        };
        Some(u64::from(range.start)..u64::from(range.end))
    }
    fn section_data(&mut self, name: &[u8]) -> Option<SharedBytes> {
        match name {
            b".pdata" => Some(self.pdata.clone()),
            b".rdata" => Some(self.unwind_info.1.clone()),
            b".text" => Some(self.code.as_ref()?.1.clone()),
            _ => None,
        }
    }
}

/// The exception directory as framehop needs it: entries valid and sorted. A clean directory
/// (the usual case) is kept as read; otherwise `functions`, the entries kept and sorted, are
/// written out again.
fn clean_pdata_x64(pdata: SharedBytes, functions: &[RuntimeFunctionX64]) -> SharedBytes {
    let begins = pdata
        .chunks_exact(12)
        .map(|e| u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
    if functions.len() * 12 == pdata.len() && begins.is_sorted() {
        return pdata;
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
    pub fn new(image: Arc<MappedImage>) -> Option<PeUnwinder> {
        let dir = image.info.exception_directory?;
        let pdata = image.read(dir.rva, dir.size as usize)?;
        let size = image.info.size_of_image;
        let arch = match image.info.machine {
            Machine::X64 => {
                let functions = read_runtime_functions_x64(&pdata, size);
                if functions.is_empty() {
                    return None;
                }
                Arch::X64 {
                    pdata: clean_pdata_x64(pdata, &functions),
                    functions,
                }
            }
            Machine::Arm64 => {
                let functions = read_runtime_functions_arm64(&pdata, size);
                if functions.is_empty() {
                    return None;
                }
                Arch::Arm64 { functions }
            }
            _ => return None,
        };
        Some(PeUnwinder {
            image,
            arch,
            id: NEXT_UNWINDER.fetch_add(1, Ordering::Relaxed),
        })
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

    /// Bytes the tables hold: the entries and, on x64, the `.pdata` framehop searches when
    /// it was read from a file (from dump memory it is usually a slice of the image).
    pub fn held_bytes(&self) -> usize {
        match &self.arch {
            Arch::X64 { functions, pdata } => {
                let read = match self.image.source {
                    ImageSource::File(_) => pdata.len(),
                    ImageSource::DumpMemory => 0,
                };
                functions.len() * std::mem::size_of::<RuntimeFunctionX64>() + read
            }
            Arch::Arm64 { functions } => {
                functions.len() * std::mem::size_of::<RuntimeFunctionArm64>()
            }
        }
    }

    /// Where the unwind tables came from.
    pub fn image(&self) -> &MappedImage {
        &self.image
    }

    /// Unwinds one frame of the module loaded at `base`.
    pub fn walk(&self, base: u64, walker: &mut dyn FrameWalker) -> Option<()> {
        match &self.arch {
            Arch::X64 { functions, pdata } => self.walk_x64(base, functions, pdata, walker),
            Arch::Arm64 { functions } => {
                crate::unwind_arm64::walk(&self.image, functions, base, walker)
            }
        }
    }

    /// This thread's kept unwinder of the function beginning at `begin` in this module
    /// loaded at `base`, taken out while a frame uses it.
    fn take_kept(&self, base: u64, begin: u32) -> Option<KeptUnwinder> {
        KEPT.with(|kept| {
            let mut kept = kept.borrow_mut();
            let at = kept
                .iter()
                .position(|k| k.owner == self.id && k.base == base && k.begin == begin)?;
            kept.remove(at)
        })
    }

    /// Keeps `unwinder` as this thread's newest, dropping the oldest past [`KEPT_UNWINDERS`].
    fn keep(unwinder: KeptUnwinder) {
        KEPT.with(|kept| {
            let mut kept = kept.borrow_mut();
            kept.push_front(unwinder);
            kept.truncate(KEPT_UNWINDERS);
        });
    }

    fn walk_x64(
        &self,
        base: u64,
        functions: &[RuntimeFunctionX64],
        pdata: &SharedBytes,
        walker: &mut dyn FrameWalker,
    ) -> Option<()> {
        let ip = walker.get_instruction();
        let rva = u32::try_from(ip.checked_sub(base)?).ok()?;
        let first = !walker.has_grand_callee();
        // No entry: a leaf function, which the stack walker unwinds itself (the return
        // address at `[rsp]` must follow a call), or not code at all.
        let function = lookup_x64(functions, rva)?;
        let (frame_register, unwind_info) = self.check_chain_x64(function)?;
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
        let mut kept = match first {
            true => None,
            false => self.take_kept(base, function.begin),
        };
        if kept.is_none() {
            let code = if first {
                let len = function.end.checked_sub(rva)? as usize;
                Some((rva..function.end, self.image.read_laid_out(rva, len)?))
            } else {
                None
            };
            let unwind_bytes = self
                .image
                .read_laid_out(unwind_info.start, unwind_info.len())?;
            let end = base.checked_add(u64::from(self.image.info.size_of_image))?;
            let mut unwinder = UnwinderX86_64::new();
            unwinder.add_module(framehop::Module::new(
                String::new(),
                base..end,
                base,
                FrameSections {
                    pdata: pdata.clone(),
                    unwind_info: (unwind_info, unwind_bytes),
                    code,
                },
            ));
            kept = Some(KeptUnwinder {
                owner: self.id,
                base,
                begin: function.begin,
                unwinder,
                cache: CacheX86_64::new(),
            });
        }
        let mut kept = kept?;
        let result = {
            let reader: &dyn FrameWalker = walker;
            let mut read = |addr: u64| reader.get_register_at_address(addr).ok_or(());
            let KeptUnwinder {
                unwinder, cache, ..
            } = &mut kept;
            crate::source::panic_guard::contain(|| {
                unwinder.unwind_frame(address, &mut regs, cache, &mut read)
            })
        };
        if !first {
            Self::keep(kept);
        }
        let ra = result?.ok()??;
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
    /// returns the frame register of the first and the RVA range the chain spans.
    fn check_chain_x64(&self, f: &RuntimeFunctionX64) -> Option<(u8, Range<u32>)> {
        let mut at = f.unwind_info;
        let mut frame_register = None;
        let mut span = at..at;
        for _ in 0..MAX_CHAIN {
            let info = UnwindInfoX64::parse(&self.read_unwind_info_head(at)?).ok()?;
            let len = u32::try_from(info.len).ok()?;
            if !self.image.is_valid(at, len) {
                return None;
            }
            span = span.start.min(at)..span.end.max(at.checked_add(len)?);
            frame_register.get_or_insert(info.frame_register);
            match info.chained {
                Some(next) => at = next.unwind_info,
                None => return Some((frame_register?, span)),
            }
        }
        None
    }

    /// The bytes at `at` an `UNWIND_INFO` can occupy (its header, at most 255 code slots
    /// and a chain entry), clipped to the image's end.
    fn read_unwind_info_head(&self, at: u32) -> Option<SharedBytes> {
        const LONGEST_UNWIND_INFO: u32 = 4 + 128 * 4 + 12;
        let end = at
            .checked_add(LONGEST_UNWIND_INFO)?
            .min(self.image.info.size_of_image);
        self.image.read_laid_out(at, end.checked_sub(at)? as usize)
    }
}
