//! The stack walk: from each frame to its caller by, in order, the callee's unwind data, the
//! leaf-function rule (innermost frame only: the x64/ARM64 ABI where unwind tables exist,
//! else the code around the fault), the frame-pointer chain (ARM64: the frame records), and
//! stack scanning. Every guessed return address (leaf, frame pointer, scan) must follow a
//! call instruction in the code the dump or the module image holds; a return address from
//! unwind data must lie in code.
//!
//! Code outside every module (JIT compilers' output) counts as code where the dump's memory
//! info list marks it executable, or, without that list, where a frame-pointer chain runs
//! through it: frame-pointer links into such code are followed only when the chain from
//! there climbs the stack, each return address not refuted by its call site, and reaches
//! module code again.

use std::sync::Arc;

use breakpad_symbols::FrameSymbolizer;
use minidump::MinidumpModule;
use ntdbg_symbols::{ModuleSymbols, SymbolStatus, SymbolStore};
use ntdbg_targets::{Arch, Target};

use super::call_site::{self, CallCheck, MAX_X86_CALL};
use super::cfi::UnwindStep;
use super::code::{code_before, read_code};
use super::executable::{protection, Protection};
use super::frame_symbols::{FrameSymbols, SymbolMemo};
use super::leaf_code::{returns_through_stack_top, BYTES_BEFORE};
use super::memory::StackMemory;
use super::regs::{strip_pac, Layout, Regs};
use super::{FoundBy, Trust};
use crate::disasm::Bitness;
use crate::provider::load_module_symbols;

/// Words scanned for a return address after a frame found by its context or unwind data
/// (the first frames are often the messiest), and after any other frame.
const SCAN_WORDS_AFTER_TRUSTED: u64 = 160;
const SCAN_WORDS: u64 = 40;

/// Windows x64 frame pointers may point up to 240 bytes into a frame, in 16-byte steps.
const X64_FRAME_POINTER_SLOTS: u64 = 16;

/// Addresses below this are the null page: a return address there ends the walk.
const NULL_PAGE: u64 = 4096;

/// Links of a frame-pointer chain followed through code outside every module before it must
/// have reached module code again.
const MAX_OUTSIDE_LINKS: usize = 256;

/// One walked frame with how it was found.
pub(crate) struct Walked {
    /// The frame's registers.
    pub(crate) regs: Regs,
    /// The exact pc for the context frame, the return address for callers.
    pub(crate) resume_address: u64,
    /// The address symbols were looked up at: the pc, or inside the call for callers.
    pub(crate) instruction: u64,
    /// The module and symbols at `instruction`.
    pub(crate) symbols: FrameSymbols,
    pub(crate) found_by: FoundBy,
    pub(crate) trust: Trust,
}

/// Where an address lies with respect to code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// In an executable section of a module (or a module whose sections are unknown).
    Code,
    /// In a module, but in a section that is not executable.
    ModuleData,
    /// In no module, in memory the memory info list marks executable (JIT code).
    Executable,
    /// In no module, where no memory info list says what the memory is.
    Unknown,
    /// In no module, in memory the memory info list says is not executable.
    NotCode,
}

impl Place {
    /// Whether this may be code outside every module (JIT code).
    fn outside_modules(self) -> bool {
        matches!(self, Place::Executable | Place::Unknown)
    }

    /// How a note names a place that is not code.
    fn describe(self) -> &'static str {
        match self {
            Place::ModuleData => "in a module's data, not its code",
            Place::NotCode => "in no module, in memory that is not executable",
            _ => "in no module",
        }
    }
}

/// What the frame-pointer chain says about a frame's caller.
enum Chain {
    /// The caller, its return address checked.
    Caller(Box<Walked>),
    /// The chain ends here: this is the thread's outermost frame.
    End,
    /// No usable frame pointer or record: try scanning.
    Broken,
}

/// What a stack scan accepts, and how far it looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScanFor {
    /// Any plausible return address not refuted by its call site.
    Any,
    /// The same, over a longer range: after the context frame or unwind data, where the
    /// first frames without unwind data are often the messiest.
    AfterTrusted,
    /// Only return addresses that follow a call in known code, other than the callee's own.
    CallSite,
}

/// One stack walk.
pub(crate) struct Walker<'a> {
    pub(crate) target: &'a dyn Target,
    pub(crate) symbols: &'a SymbolStore,
    pub(crate) arch: Arch,
    pub(crate) layout: &'static Layout,
    pub(crate) stack: StackMemory<'a>,
    /// What the walk had to say about physical frames (by the walker's own frame number):
    /// rejected return addresses and fallbacks.
    pub(crate) notes: Vec<(usize, String)>,
    /// The frames' symbols, looked up once per address.
    pub(crate) memo: SymbolMemo,
    /// Frame-pointer records (their addresses) of chains through code outside every module
    /// already found to reach module code again.
    pub(crate) chained_records: Vec<u64>,
}

impl Walker<'_> {
    /// Walks from `context` (frame 0) to the outermost frame found, at most `limit` frames.
    pub(crate) fn run(&mut self, context: Regs, limit: usize) -> Vec<Walked> {
        let mut frames = vec![self.symbolized(context, 0, FoundBy::Context, Trust::Context)];
        while frames.len() < limit {
            match self.caller(&frames) {
                Some(next) => frames.push(next),
                None => break,
            }
        }
        frames
    }

    fn symbolized(&self, context: Regs, index: usize, found_by: FoundBy, trust: Trust) -> Walked {
        symbolized(
            self.target,
            self.symbols,
            &self.memo,
            context,
            index,
            Found { found_by, trust },
        )
    }

    /// How far before a return address callers are looked up.
    fn call_back(&self) -> u64 {
        call_back(self.arch)
    }

    fn module_symbols(&self, module: &MinidumpModule) -> Arc<ModuleSymbols> {
        load_module_symbols(self.target, self.symbols, module)
    }

    /// The caller of the last frame, by the first method that gives a plausible one.
    fn caller(&mut self, frames: &[Walked]) -> Option<Walked> {
        let callee = frames.last()?;
        let index = frames.len();
        let after_trusted = matches!(callee.found_by, FoundBy::Context | FoundBy::Cfi);
        if let Some(context) = self.by_unwind_data(frames) {
            let ip = context.value(self.layout.ip);
            // The unwind data says where the stack ends (a zero return address) and never
            // moves the stack pointer down: trust it on both, except after a guessed x86
            // frame, whose esp misses the parameters its callee popped (`stdcall`) when that
            // callee had no symbols: its frame data then reads the wrong word. Scanning from
            // there for a return address that follows a call finds the caller.
            if ip < NULL_PAGE || !self.progresses(callee, &context, index) {
                if self.arch == Arch::X86 && !after_trusted && self.may_guess(index) {
                    let found = self.by_scan(callee, index, ScanFor::CallSite);
                    if let Some(f) = &found {
                        self.notes.push((
                            index,
                            format!(
                                "frame data after a guessed frame gave return address {ip:#x}; \
                                 {:#x} found by scanning for a call site instead",
                                f.resume_address
                            ),
                        ));
                    }
                    return found;
                }
                return None;
            }
            let place = self.place(ip);
            // A return address into code outside every module that no memory info list vouches
            // for is taken when that code's frame-pointer chain leads back to module code.
            let code = match place {
                Place::Code | Place::Executable => true,
                Place::Unknown => {
                    let (fp, sp) = (context.get(self.layout.fp), context.get(self.layout.sp));
                    fp.zip(sp)
                        .is_some_and(|(fp, sp)| self.chain_reaches_module(fp, sp))
                }
                Place::ModuleData | Place::NotCode => false,
            };
            if code {
                return Some(self.symbolized(context, index, FoundBy::Cfi, Trust::UnwindData));
            }
            let r#where = place.describe();
            self.notes.push((
                index,
                format!("the unwind data's return address {ip:#x} is {where}: not taken"),
            ));
        }
        if !self.may_guess(index) {
            return None;
        }
        if index == 1 {
            if let Some(leaf) = self.leaf(callee) {
                return Some(leaf);
            }
        }
        match self.by_frame_pointer(callee, index) {
            Chain::Caller(frame) => Some(*frame),
            Chain::End => None,
            Chain::Broken => {
                let range = if after_trusted {
                    ScanFor::AfterTrusted
                } else {
                    ScanFor::Any
                };
                self.by_scan(callee, index, range)
            }
        }
    }

    /// Whether frame `index`'s caller may be guessed (leaf rule, frame pointer, stack scan):
    /// not in a dump whose memory was cut short, where the stack words, code and unwind data
    /// that would have refuted a guess, or found the caller another way, may be the ones
    /// lost. The walk then ends at the last frame its context or unwind data proves, and says
    /// so.
    fn may_guess(&mut self, index: usize) -> bool {
        if !self.target.memory_cut_short() {
            return true;
        }
        self.notes.push((
            index,
            "the dump is cut short and lost memory: frames past here would be guesses, not given"
                .to_string(),
        ));
        false
    }

    /// The caller from the callee's unwind data (Breakpad CFI/`STACK WIN`, PE tables).
    fn by_unwind_data(&self, frames: &[Walked]) -> Option<Regs> {
        let callee = frames.last()?;
        let module = self
            .target
            .modules()
            .module_at_address(callee.instruction)?;
        let grand_callee_parameter_size = frames
            .len()
            .checked_sub(2)
            .map(|i| frames[i].symbols.parameter_size.unwrap_or(0));
        let mut step = UnwindStep::new(
            callee.instruction,
            grand_callee_parameter_size,
            &callee.regs,
            &self.stack,
            self.arch == Arch::Arm64,
        );
        self.module_symbols(module).walk_frame(module, &mut step)?;
        step.finish()
    }

    /// The innermost frame as a leaf function, which neither moves the stack pointer nor saves
    /// registers: x64 code of a module whose unwind tables have no entry for it (the ABI says
    /// it is a leaf), x86/x64 code no unwind data covers whose bytes around the fault show it
    /// ([`returns_through_stack_top`]), ARM64 code without an entry or outside every module
    /// (as after a call through a bad pointer). x86/x64: the return address is at `[sp]`;
    /// ARM64: in `lr`.
    fn leaf(&mut self, callee: &Walked) -> Option<Walked> {
        let context = &callee.regs;
        let pc = callee.instruction;
        let module = self.target.modules().module_at_address(pc);
        let symbols = module.map(|m| (m, self.module_symbols(m)));
        let rva = |m: &MinidumpModule| pc - m.raw.base_of_image;
        let no_entry = symbols
            .as_ref()
            .and_then(|(m, s)| s.unwind_entry_covers(rva(m)))
            .map(|covered| !covered);
        let (ra, caller_sp) = match self.arch {
            Arch::X64 if no_entry == Some(true) => self.return_at_stack_top(context)?,
            Arch::X86 | Arch::X64
                if !symbols
                    .as_ref()
                    .is_some_and(|(m, s)| s.unwind_data_covers(rva(m)))
                    && self.code_returns_through_stack_top(pc) =>
            {
                self.return_at_stack_top(context)?
            }
            Arch::Arm64 if module.is_none() || no_entry == Some(true) => {
                let lr = context.get_named("lr")?;
                (strip_pac(lr), context.get(self.layout.sp)?)
            }
            _ => return None,
        };
        let trust = self.return_trust(ra)?;
        let trust = self.placed_trust(ra, trust, context.get(self.layout.fp), caller_sp)?;
        let mut caller = context.caller();
        caller.keep_callee_saved(context);
        caller.set(self.layout.ip, ra)?;
        caller.set(self.layout.sp, caller_sp)?;
        Some(self.symbolized(caller, 1, FoundBy::Leaf, trust))
    }

    /// The word at the stack pointer as a return address, and the stack pointer after it.
    fn return_at_stack_top(&self, context: &Regs) -> Option<(u64, u64)> {
        let sp = context.get(self.layout.sp)?;
        let ptr = self.stack.pointer_size as u64;
        Some((self.stack.pointer_at(sp)?, sp.checked_add(ptr)?))
    }

    /// Whether the code around `pc` (from the dump, else the module's image) shows a leaf
    /// function that returns through the word at the stack pointer.
    fn code_returns_through_stack_top(&self, pc: u64) -> bool {
        let Some(bitness) = Bitness::of_arch(self.arch) else {
            return false;
        };
        let before = code_before(self.target, self.symbols, pc, BYTES_BEFORE);
        let read = |addr: u64, len: usize| {
            read_code(self.target, self.symbols, addr, len).map(|b| b.into_owned())
        };
        returns_through_stack_top(bitness, pc, &before, &read)
    }

    /// How a return address a guess found (the leaf rule, a frame pointer), whose call site
    /// gave `trust`, is trusted where it lies, with the frame pointer and stack pointer its
    /// frame would have: `None` where no code is. In code outside every module, a return
    /// address whose call site is unknown stands only when that code's frame-pointer chain
    /// reaches module code again ([`Trust::FrameChain`]).
    fn placed_trust(&mut self, ra: u64, trust: Trust, fp: Option<u64>, sp: u64) -> Option<Trust> {
        if ra < NULL_PAGE {
            return None;
        }
        let place = self.place(ra);
        match place {
            Place::Code => Some(trust),
            _ if !place.outside_modules() => None,
            _ if trust == Trust::CallSite => Some(trust),
            _ => fp
                .is_some_and(|fp| self.chain_reaches_module(fp, sp))
                .then_some(Trust::FrameChain),
        }
    }

    /// Whether the frame-pointer chain whose first record is at `record` (a saved frame
    /// pointer, then a return address), in a frame whose stack pointer is `sp`, reaches module
    /// code: each record above the last and inside the stack, each return address in code
    /// outside every module and not refuted by its call site, until one lies in a module's
    /// code (and is not refuted either).
    fn chain_reaches_module(&mut self, record: u64, sp: u64) -> bool {
        let ptr = self.stack.pointer_size as u64;
        let mut record = record;
        let mut lowest = sp;
        let mut visited = Vec::new();
        let mut reached = false;
        for _ in 0..MAX_OUTSIDE_LINKS {
            if self.chained_records.contains(&record) {
                reached = true;
                break;
            }
            if record < lowest || !self.stack.contains(record) {
                return false;
            }
            let next = self.stack.pointer_at(record);
            let ra = record
                .checked_add(ptr)
                .and_then(|a| self.stack.pointer_at(a))
                .map(|ra| {
                    if self.arch == Arch::Arm64 {
                        strip_pac(ra)
                    } else {
                        ra
                    }
                });
            let (Some(next), Some(ra)) = (next, ra) else {
                return false;
            };
            if ra < NULL_PAGE || self.return_trust(ra).is_none() {
                return false;
            }
            visited.push(record);
            match self.place(ra) {
                Place::Code => {
                    reached = true;
                    break;
                }
                place if place.outside_modules() => {}
                _ => return false,
            }
            lowest = record + 2 * ptr;
            record = next;
        }
        if reached {
            self.chained_records.extend(visited);
        }
        reached
    }

    /// The caller through the frame pointer: x86 `[ebp]`/`[ebp+4]`; x64 the same pair up to
    /// 240 bytes above `rbp` (Windows lets `rbp` point into the frame); ARM64 the frame
    /// record `[fp]` (caller's fp) and `[fp+8]` (lr).
    fn by_frame_pointer(&mut self, callee: &Walked, index: usize) -> Chain {
        let context = &callee.regs;
        let (Some(fp), Some(sp)) = (context.get(self.layout.fp), context.get(self.layout.sp))
        else {
            return Chain::Broken;
        };
        if self.place_of(callee.instruction).outside_modules() {
            return self.by_frame_pointer_outside_modules(callee, index, fp, sp);
        }
        let ptr = self.stack.pointer_size as u64;
        let slots = if self.arch == Arch::X64 {
            X64_FRAME_POINTER_SLOTS
        } else {
            1
        };
        let mut rejected = None;
        for slot in 0..slots {
            let Some(record) = fp.checked_add(slot * 2 * ptr).filter(|r| *r >= sp) else {
                return Chain::Broken;
            };
            let (Some(caller_fp), Some(raw_ra)) = (
                self.stack.pointer_at(record),
                record
                    .checked_add(ptr)
                    .and_then(|a| self.stack.pointer_at(a)),
            ) else {
                return Chain::Broken;
            };
            // The outermost frame's record: a return address in the null page (x86), also
            // with a zero frame pointer (ARM64). x64 `rbp` need not point at a record: no
            // proof there.
            let outermost = match self.arch {
                Arch::X86 => raw_ra < NULL_PAGE,
                Arch::Arm64 => raw_ra < NULL_PAGE && caller_fp == 0,
                _ => false,
            };
            if outermost {
                return Chain::End;
            }
            let ra = if self.arch == Arch::Arm64 {
                strip_pac(raw_ra)
            } else {
                raw_ra
            };
            let Some(caller_sp) = record.checked_add(2 * ptr) else {
                return Chain::Broken;
            };
            // The chain climbs the stack: the caller's frame pointer lies above this record
            // (x86 allows anything there: its outermost frame keeps ebp 0). On x64 a saved
            // value below the record means rbp points lower into the frame: try the next
            // slot; one above it but outside the stack means rbp is no frame pointer at all.
            let chained = match self.arch {
                Arch::X86 => true,
                Arch::X64 if caller_fp < caller_sp => false,
                Arch::X64 if !self.stack.contains(caller_fp) => return Chain::Broken,
                Arch::X64 => true,
                _ => caller_fp == 0 || (caller_fp > record && self.stack.contains(caller_fp)),
            };
            if !chained || ra < NULL_PAGE || caller_sp <= sp {
                continue;
            }
            let place = self.place(ra);
            if place != Place::Code && !place.outside_modules() {
                continue;
            }
            let Some(trust) = self.return_trust(ra) else {
                rejected = Some(ra);
                continue;
            };
            // A return address outside every module: its frame's record is `caller_fp`.
            let Some(trust) = self.placed_trust(ra, trust, Some(caller_fp), caller_sp) else {
                continue;
            };
            let mut caller = context.caller();
            if caller.set(self.layout.ip, ra).is_none()
                || caller.set(self.layout.sp, caller_sp).is_none()
            {
                return Chain::Broken;
            }
            if caller_fp != 0 || self.arch == Arch::X86 {
                caller.set(self.layout.fp, caller_fp);
            }
            let frame = self.symbolized(caller, index, FoundBy::FramePointer, trust);
            return Chain::Caller(Box::new(frame));
        }
        if let Some(ra) = rejected {
            self.notes.push((
                index,
                format!(
                    "the frame pointer's return address {ra:#x} does not follow a call: not taken"
                ),
            ));
        }
        Chain::Broken
    }

    /// The caller of a frame in code outside every module, through its frame-pointer record
    /// `[fp]`, `[fp + pointer]` (JIT compilers keep standard frames): the return address must
    /// lie in module code or lead there through further such records
    /// ([`Walker::chain_reaches_module`]). The caller's frame pointer is the saved one,
    /// whatever it is: module code need not keep one.
    fn by_frame_pointer_outside_modules(
        &mut self,
        callee: &Walked,
        index: usize,
        fp: u64,
        sp: u64,
    ) -> Chain {
        let ptr = self.stack.pointer_size as u64;
        let (Some(caller_fp), Some(raw_ra), Some(caller_sp)) = (
            self.stack.pointer_at(fp).filter(|_| fp >= sp),
            fp.checked_add(ptr).and_then(|a| self.stack.pointer_at(a)),
            fp.checked_add(2 * ptr),
        ) else {
            return Chain::Broken;
        };
        if raw_ra < NULL_PAGE {
            return if self.arch == Arch::X86 || caller_fp == 0 {
                Chain::End
            } else {
                Chain::Broken
            };
        }
        let ra = if self.arch == Arch::Arm64 {
            strip_pac(raw_ra)
        } else {
            raw_ra
        };
        // This frame's own record starts the chain that must lead to module code.
        if !self.chain_reaches_module(fp, sp) {
            return Chain::Broken;
        }
        let Some(trust) = self.return_trust(ra) else {
            return Chain::Broken;
        };
        let trust = if trust == Trust::Unverified {
            Trust::FrameChain
        } else {
            trust
        };
        let mut caller = callee.regs.caller();
        if caller.set(self.layout.ip, ra).is_none()
            || caller.set(self.layout.sp, caller_sp).is_none()
        {
            return Chain::Broken;
        }
        caller.set(self.layout.fp, caller_fp);
        let frame = self.symbolized(caller, index, FoundBy::FramePointer, trust);
        Chain::Caller(Box::new(frame))
    }

    /// The caller from the first stack word above the callee's stack pointer that is a
    /// return address into code, after a call instruction.
    fn by_scan(&self, callee: &Walked, index: usize, scan: ScanFor) -> Option<Walked> {
        let context = &callee.regs;
        let sp = context.get(self.layout.sp)?;
        let ptr = self.stack.pointer_size as u64;
        let words = if scan == ScanFor::AfterTrusted {
            SCAN_WORDS_AFTER_TRUSTED
        } else {
            SCAN_WORDS
        };
        for i in 0..words {
            let slot = sp.checked_add(i * ptr)?;
            let raw = self.stack.pointer_at(slot)?;
            let ra = if self.arch == Arch::Arm64 {
                strip_pac(raw)
            } else {
                raw
            };
            if !self.plausible_return(ra) {
                continue;
            }
            let Some(trust) = self.return_trust(ra) else {
                continue;
            };
            // The strict scan looks for the caller of a frame whose stack pointer is known to
            // be off: a stale copy of that frame's own return address is not its caller.
            if scan == ScanFor::CallSite
                && (trust != Trust::CallSite || ra == callee.resume_address)
            {
                continue;
            }
            let caller_sp = slot.checked_add(ptr)?;
            let mut caller = context.caller();
            caller.set(self.layout.ip, ra)?;
            caller.set(self.layout.sp, caller_sp)?;
            if let Some(caller_fp) = self.scanned_frame_pointer(context, slot, caller_sp) {
                caller.set(self.layout.fp, caller_fp);
            }
            return Some(self.symbolized(caller, index, FoundBy::Scan, trust));
        }
        None
    }

    /// The caller's frame pointer after a scan found the return address at `slot` (x86,
    /// x64): the value saved just below it when the callee's frame pointer points there (a
    /// standard prologue), else the callee's own when it lies above (never changed).
    fn scanned_frame_pointer(&self, context: &Regs, slot: u64, caller_sp: u64) -> Option<u64> {
        if self.arch == Arch::Arm64 {
            return None;
        }
        const MAX_FRAME: u64 = 128 * 1024;
        let fp = context.get(self.layout.fp)?;
        let ptr = self.stack.pointer_size as u64;
        let saved_at = slot.checked_sub(ptr)?;
        if fp == saved_at {
            let saved = self.stack.pointer_at(saved_at)?;
            return (saved > slot && saved - saved_at <= MAX_FRAME && self.stack.contains(saved))
                .then_some(saved);
        }
        (fp >= caller_sp).then_some(fp)
    }

    /// Whether a stack word may be a return address: aligned (ARM64), inside a module's code
    /// and, where the module has symbols, inside a function they name.
    fn plausible_return(&self, ra: u64) -> bool {
        // ARM64 instructions are 4-byte aligned, and so is every return address.
        if ra < NULL_PAGE || (self.arch == Arch::Arm64 && !ra.is_multiple_of(4)) {
            return false;
        }
        let at = ra.wrapping_sub(self.call_back());
        let Some(module) = self.target.modules().module_at_address(at) else {
            return false;
        };
        let symbols = self.module_symbols(module);
        if symbols.is_code(at - module.raw.base_of_image) == Some(false) {
            return false;
        }
        if symbols.status() == SymbolStatus::NoSymbols {
            return true;
        }
        let mut probe = Probe {
            instruction: at,
            named: false,
        };
        symbols.fill_symbol(module, &mut probe);
        probe.named
    }

    /// How a guessed return address is trusted: `CallSite` after a call, `Unverified` when
    /// the code before it is unknown, `None` (rejected) when it does not follow a call.
    fn return_trust(&self, ra: u64) -> Option<Trust> {
        let max = if self.arch == Arch::Arm64 {
            4
        } else {
            MAX_X86_CALL
        };
        let code = code_before(self.target, self.symbols, ra, max);
        match call_site::check(self.arch, ra, &code) {
            CallCheck::Call => Some(Trust::CallSite),
            CallCheck::Unknown => Some(Trust::Unverified),
            CallCheck::NotCall => None,
        }
    }

    /// Where `addr` (a return address: looked at inside its call) lies: module code, module
    /// data, or outside every module as the memory info list says.
    fn place(&self, addr: u64) -> Place {
        self.place_of(addr.wrapping_sub(self.call_back()))
    }

    /// Where the instruction at `at` lies (see [`Walker::place`]).
    fn place_of(&self, at: u64) -> Place {
        let Some(module) = self.target.modules().module_at_address(at) else {
            return match protection(self.target, at) {
                Protection::Executable => Place::Executable,
                Protection::NotExecutable => Place::NotCode,
                Protection::Unknown => Place::Unknown,
            };
        };
        match self
            .module_symbols(module)
            .is_code(at - module.raw.base_of_image)
        {
            Some(false) => Place::ModuleData,
            _ => Place::Code,
        }
    }

    /// Whether the caller's stack pointer lies above the callee's (the stack unwinds
    /// upwards). An ARM64 innermost frame may share its caller's: a leaf's caller does.
    fn progresses(&self, callee: &Walked, caller: &Regs, index: usize) -> bool {
        let before = callee.regs.value(self.layout.sp);
        let after = caller.value(self.layout.sp);
        after > before
            || (self.arch == Arch::Arm64
                && index == 1
                && after == before
                && caller.value(self.layout.ip) != callee.resume_address)
    }
}

/// How a frame was found and validated.
struct Found {
    found_by: FoundBy,
    trust: Trust,
}

/// A frame for `regs`, symbolized; `index` > 0 makes it a caller, looked up inside its
/// call instruction.
fn symbolized(
    target: &dyn Target,
    symbols: &SymbolStore,
    memo: &SymbolMemo,
    regs: Regs,
    index: usize,
    found: Found,
) -> Walked {
    let resume_address = regs.value(regs.layout().ip);
    let instruction = if index > 0 {
        resume_address.wrapping_sub(call_back(target.arch()))
    } else {
        resume_address
    };
    Walked {
        regs,
        resume_address,
        instruction,
        symbols: memo.get(target, symbols, instruction),
        found_by: found.found_by,
        trust: found.trust,
    }
}

/// How far before a return address callers are looked up: inside the call instruction.
fn call_back(arch: Arch) -> u64 {
    if arch == Arch::Arm64 {
        4
    } else {
        1
    }
}

/// Asks symbols whether an address is named (a stack-scan candidate's plausibility).
struct Probe {
    instruction: u64,
    named: bool,
}

impl FrameSymbolizer for Probe {
    fn get_instruction(&self) -> u64 {
        self.instruction
    }
    fn set_function(&mut self, name: &str, _base: u64, _parameter_size: u32) {
        self.named |= !name.is_empty();
    }
    fn set_source_file(&mut self, _file: &str, _line: u32, _base: u64) {}
    fn add_inline_frame(&mut self, _name: &str, _file: Option<&str>, _line: Option<u32>) {}
}
