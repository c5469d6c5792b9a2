//! Stack walking: a thread's call stack from a register context, with how each frame was found.
//!
//! The walk itself is `minidump-unwind`'s (CFI from Breakpad records or PDB frame data, then
//! PE unwind tables, then frame pointers, then stack scanning); symbols come from our
//! [`SymbolStore`](ntdbg_symbols::SymbolStore) through [`crate::provider`].

use crate::provider::StoreProvider;
use crate::symbolize::module_name;
use crate::text::call_site_name;
use minidump::system_info::{Cpu, Os};
use minidump::{MinidumpContext, MinidumpMemory, UnifiedMemory};
use minidump_unwind::{CallStack, FrameTrust, SystemInfo};
use ntdbg_symbols::{strip_parameters, SymbolStore};
use ntdbg_targets::{Arch, Target};
use serde::Serialize;

/// Upper bound on frames in one walk (WinDbg's own default display is far smaller).
pub const MAX_FRAMES: usize = 1024;

/// How a frame was found, from most to least trustworthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FoundBy {
    /// The register context itself (frame 0).
    Context,
    /// Unwind data: PDB frame data / FPO, Breakpad CFI, or PE `.pdata`/`.xdata`.
    Cfi,
    /// The frame-pointer chain.
    FramePointer,
    /// A plausible return address found by scanning the stack.
    Scan,
    /// Anything else the walker reports.
    Other,
}

impl FoundBy {
    /// Stable key (`context`, `cfi`, `frame_pointer`, `scan`).
    pub fn name(self) -> &'static str {
        match self {
            FoundBy::Context => "context",
            FoundBy::Cfi => "cfi",
            FoundBy::FramePointer => "frame_pointer",
            FoundBy::Scan => "scan",
            FoundBy::Other => "other",
        }
    }

    fn from_trust(trust: FrameTrust) -> FoundBy {
        match trust {
            FrameTrust::Context => FoundBy::Context,
            FrameTrust::CallFrameInfo | FrameTrust::PreWalked => FoundBy::Cfi,
            FrameTrust::FramePointer => FoundBy::FramePointer,
            FrameTrust::Scan | FrameTrust::CfiScan => FoundBy::Scan,
            FrameTrust::None => FoundBy::Other,
        }
    }
}

/// One frame of a call stack. Inlined calls appear as their own frames, as in WinDbg.
#[derive(Debug, Clone, Serialize)]
pub struct Frame {
    /// Frame number, as `kn` prints it (inline frames count).
    pub index: usize,
    /// The instruction address: the exact IP for frame 0, the return address for callers
    /// (symbols were looked up at the call instruction, one byte before it).
    pub instruction: u64,
    /// The stack pointer in this frame (WinDbg's Child-SP).
    pub stack_pointer: u64,
    /// The frame pointer register (ebp/rbp/fp) in this frame, when known.
    pub frame_pointer: Option<u64>,
    /// Where this frame returns to (the next frame's instruction), when known.
    pub return_address: Option<u64>,
    /// The module name (WinDbg style: file name without extension).
    pub module: Option<String>,
    /// The module's base address.
    pub module_base: Option<u64>,
    /// The function (with its parameter list when the symbols give one).
    pub function: Option<String>,
    /// Offset from the function start.
    pub function_offset: Option<u64>,
    /// Source file.
    pub source_file: Option<String>,
    /// Source line.
    pub source_line: Option<u32>,
    /// How the frame was found.
    pub found_by: FoundBy,
    /// Whether this is an inlined call (no stack frame of its own).
    pub inline: bool,
    /// The first stack words above the return address ("Args to Child" in `kb`).
    pub args: Vec<u64>,
    /// The registers the walker recovered for this frame (for an inlined call: those of its
    /// physical frame); `context.valid` says which are known.
    #[serde(skip)]
    pub context: MinidumpContext,
}

impl Frame {
    /// The call site in WinDbg form: `crashy!main+0x10`, `crashy+0x1234` or the address.
    pub fn call_site(&self) -> String {
        // Inlined calls have no offset of their own.
        let offset = if self.inline {
            None
        } else {
            self.function_offset
        };
        call_site_name(
            self.module.as_deref(),
            self.module_base,
            self.function.as_deref().map(strip_parameters),
            offset,
            self.instruction,
        )
    }

    /// The address symbols and variable ranges are looked up at: the exact instruction for the
    /// context frame, the call instruction (return address − 1) for callers.
    pub fn lookup_address(&self) -> u64 {
        if self.found_by == FoundBy::Context {
            self.instruction
        } else {
            self.instruction.wrapping_sub(1)
        }
    }

    /// A register of this frame by name (sub-registers included), only when the walker
    /// recovered it: volatile registers of caller frames are unknown.
    pub fn register(&self, name: &str) -> Option<u64> {
        crate::registers::known_register(&self.context, name)
    }

    /// `crashy.c:119`, when known.
    pub fn source(&self) -> Option<String> {
        Some(format!(
            "{}:{}",
            self.source_file.as_ref()?,
            self.source_line?
        ))
    }
}

/// A walked call stack.
#[derive(Debug, Clone, Serialize)]
pub struct Stack {
    /// The thread the stack belongs to.
    pub thread_id: u32,
    /// Frames, innermost first.
    pub frames: Vec<Frame>,
    /// Why the walk could not start or stopped early, when it did.
    pub note: Option<String>,
}

/// Walks the stack that `context` starts, on a thread whose stack memory the target holds.
pub fn walk(
    target: &dyn Target,
    symbols: &SymbolStore,
    thread_id: u32,
    context: &MinidumpContext,
) -> Stack {
    let sp = context.get_stack_pointer();
    let region = target.stack_region_at(sp);
    let stack_bytes = region.and_then(|r| {
        let len = usize::try_from(r.size).ok()?;
        target.read_chunk(r.base, len).map(|b| (r.base, b))
    });
    let memory = stack_bytes.as_ref().map(|(base, bytes)| MinidumpMemory {
        desc: Default::default(),
        base_address: *base,
        size: bytes.len() as u64,
        bytes: bytes.as_ref(),
        endian: scroll::Endian::Little,
    });

    let mut call_stack = CallStack::with_context(context.clone());
    call_stack.thread_id = thread_id;
    let provider = StoreProvider { target, symbols };
    let system_info = system_info(target);
    futures_executor::block_on(minidump_unwind::walk_stack(
        0,
        (),
        &mut call_stack,
        memory.as_ref().map(UnifiedMemory::Memory),
        target.modules(),
        &system_info,
        &provider,
    ));

    let note = match &memory {
        None => Some(format!(
            "stack memory at {sp:#x} is not in the dump: only the context frame is shown"
        )),
        Some(_) if call_stack.frames.len() >= MAX_FRAMES => {
            Some(format!("stopped after {MAX_FRAMES} frames"))
        }
        Some(_) => None,
    };
    Stack {
        thread_id,
        frames: convert_frames(target, &call_stack),
        note,
    }
}

/// Turns the walker's frames into ours: inline frames split out, return addresses and
/// "args to child" filled in from the next frame.
fn convert_frames(target: &dyn Target, stack: &CallStack) -> Vec<Frame> {
    let arch = target.arch();
    let ptr = arch.pointer_size();
    let mut out = Vec::new();
    let walked = &stack.frames[..stack.frames.len().min(MAX_FRAMES)];
    for (i, f) in walked.iter().enumerate() {
        let module = f.module.as_ref();
        let module_name = module.map(|m| module_name(&m.name));
        let module_base = module.map(|m| m.raw.base_of_image);
        let caller = walked.get(i + 1);
        let caller_sp = caller.map(|c| c.context.get_stack_pointer());
        let return_address = caller.map(|c| c.resume_address);
        let args = caller_sp
            .map(|sp| {
                (0..4u64)
                    .filter_map(|k| target.read_uint(sp.wrapping_add(k * ptr as u64), ptr))
                    .collect()
            })
            .unwrap_or_default();
        let stack_pointer = f.context.get_stack_pointer();
        let frame_pointer = match arch {
            Arch::X86 => f.context.get_register("ebp"),
            Arch::X64 => f.context.get_register("rbp"),
            Arch::Arm64 => f.context.get_register("fp"),
            Arch::Other(_) => None,
        };
        // Inlined calls first (innermost first), each attributed to the physical frame.
        for inline in &f.inlines {
            out.push(Frame {
                index: out.len(),
                instruction: f.resume_address,
                stack_pointer,
                frame_pointer,
                return_address: None,
                module: module_name.clone(),
                module_base,
                function: Some(inline.function_name.clone()),
                function_offset: None,
                source_file: inline.source_file_name.clone(),
                source_line: inline.source_line,
                found_by: FoundBy::from_trust(f.trust),
                inline: true,
                args: Vec::new(),
                context: f.context.clone(),
            });
        }
        out.push(Frame {
            index: out.len(),
            instruction: f.resume_address,
            stack_pointer,
            frame_pointer,
            return_address,
            module: module_name,
            module_base,
            function: f.function_name.clone(),
            function_offset: f.function_base.map(|b| f.resume_address.wrapping_sub(b)),
            source_file: f.source_file_name.clone(),
            source_line: f.source_line,
            found_by: FoundBy::from_trust(f.trust),
            inline: false,
            args,
            context: f.context.clone(),
        });
    }
    out
}

fn system_info(target: &dyn Target) -> SystemInfo {
    let facts = target.system();
    SystemInfo {
        os: Os::Windows,
        os_version: Some(facts.os_version.clone()),
        os_build: facts.csd_version.clone(),
        cpu: match target.arch() {
            Arch::X86 => Cpu::X86,
            Arch::X64 => Cpu::X86_64,
            Arch::Arm64 => Cpu::Arm64,
            Arch::Other(n) => Cpu::Unknown(n),
        },
        cpu_info: facts.cpu_info.clone(),
        cpu_microcode_version: None,
        cpu_count: facts.cpu_count as usize,
    }
}
