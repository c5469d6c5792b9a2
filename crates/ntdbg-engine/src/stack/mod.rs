//! Stack walking: a thread's call stack from a register context, with how each frame was
//! found ([`FoundBy`]) and how far its return address was checked ([`Trust`]).
//!
//! The walk ([`walker`]) goes from each frame to its caller through the callee's unwind data
//! (Breakpad `STACK CFI`/`STACK WIN` from a `.sym` or the PDB's frame data, else the image's
//! x64/ARM64 `.pdata`, else its DWARF `.eh_frame`/`.debug_frame`), then for the innermost
//! frame the leaf-function rule (the ABI, or the code around the fault: [`leaf_code`]), then
//! frame pointers (ARM64: frame records; through code outside every module only where the
//! chain reaches module code again), then stack scanning. Guessed return addresses must
//! follow a call instruction ([`call_site`]) in the code the dump or the module image holds;
//! symbols come from our [`SymbolStore`](ntdbg_symbols::SymbolStore).

mod call_site;
mod cfi;
mod code;
mod executable;
mod frame_context;
mod frame_symbols;
mod leaf_code;
mod memory;
mod regs;
mod walker;

pub(crate) use code::read_code;
pub use frame_context::FrameContext;

use std::sync::Arc;

use crate::symbolize::module_name;
use crate::text::call_site_name;
use frame_symbols::{FrameSymbols, SymbolMemo};
use minidump::MinidumpContext;
use ntdbg_symbols::{strip_parameters, SymbolStore};
use ntdbg_targets::Target;
use serde::Serialize;

/// Upper bound on frames in one walk unless a caller asks for more (WinDbg's own default
/// display is far smaller).
pub const MAX_FRAMES: usize = 1024;

/// The most frames a walk goes to when asked for more than [`MAX_FRAMES`] (`k 0n100000` on a
/// stack overflow, to see where the recursion began). The walk climbs the stack, so a stack of
/// a MiB holds at most this many 4-byte return addresses.
pub const DEEPEST_WALK: usize = 1 << 18;

/// How a frame was found, from most to least trustworthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FoundBy {
    /// The register context itself (frame 0).
    Context,
    /// Unwind data: PDB frame data / FPO, Breakpad CFI, PE `.pdata`/`.xdata`, or the
    /// image's DWARF `.eh_frame`/`.debug_frame`.
    Cfi,
    /// The innermost frame's function is a leaf (x64/ARM64 code no unwind-table entry
    /// covers, or x86/x64 code whose bytes show no stack adjustment up to its `ret`): its
    /// return address is at `[esp]`/`[rsp]` or in `lr` (ARM64).
    Leaf,
    /// The frame-pointer chain (ARM64: the frame records `[fp]`, `[fp+8]`).
    FramePointer,
    /// A plausible return address found by scanning the stack.
    Scan,
}

impl FoundBy {
    /// Stable key (`context`, `cfi`, `leaf`, `frame_pointer`, `scan`).
    pub fn name(self) -> &'static str {
        match self {
            FoundBy::Context => "context",
            FoundBy::Cfi => "cfi",
            FoundBy::Leaf => "leaf",
            FoundBy::FramePointer => "frame_pointer",
            FoundBy::Scan => "scan",
        }
    }
}

/// How far a frame's address was validated, next to how it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Frame 0: the register context.
    Context,
    /// Recovered by the callee's unwind data, and the return address lies in code: a
    /// module's, memory the memory info list marks executable, or code outside every module
    /// whose frame-pointer chain reaches module code again.
    UnwindData,
    /// The instruction that ends exactly at the return address is a call (decoded from the
    /// dump's bytes or the module image's).
    CallSite,
    /// A frame-pointer frame through code outside every module (JIT code) whose call site is
    /// not in the dump: the chain of saved frame pointers from it climbs the stack, no return
    /// address on it is refuted by its call site, and it reaches module code again.
    FrameChain,
    /// A guess (leaf, frame pointer or scan) whose call site could not be checked: the code
    /// before the return address is in neither the dump nor a module image.
    Unverified,
}

impl Trust {
    /// Stable key (`context`, `unwind_data`, `call_site`, `frame_chain`, `unverified`).
    pub fn name(self) -> &'static str {
        match self {
            Trust::Context => "context",
            Trust::UnwindData => "unwind_data",
            Trust::CallSite => "call_site",
            Trust::FrameChain => "frame_chain",
            Trust::Unverified => "unverified",
        }
    }
}

/// One frame of a call stack. Inlined calls appear as their own frames, as in WinDbg.
///
/// Fields are declared in name order: JSON writers stream a frame in declaration order and must
/// give the sorted keys a `serde_json::Value` gives (`ntdbg run --json` prints both ways).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Frame {
    /// The first stack words above the return address ("Args to Child" in `kb`).
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "Vec<crate::hex_json::Hex>")]
    pub args: Vec<u64>,
    /// The registers the walker recovered for this frame (for an inlined call: those of its
    /// physical frame); `context.valid` says which are known.
    #[serde(skip)]
    pub context: FrameContext,
    /// How the frame was found.
    pub found_by: FoundBy,
    /// The frame pointer register (ebp/rbp/fp) in this frame, when known.
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "Option<crate::hex_json::Hex>")]
    pub frame_pointer: Option<u64>,
    /// The function (with its parameter list when the symbols give one).
    pub function: Option<String>,
    /// Offset from the function start.
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "Option<crate::hex_json::Hex>")]
    pub function_offset: Option<u64>,
    /// Frame number, as `kn` prints it (inline frames count).
    pub index: usize,
    /// Whether this is an inlined call (no stack frame of its own).
    pub inline: bool,
    /// The instruction address: the exact IP for frame 0, the return address for callers
    /// (symbols were looked up at the call instruction, one byte before it).
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "crate::hex_json::Hex")]
    pub instruction: u64,
    /// The module name (WinDbg style: file name without extension).
    pub module: Option<String>,
    /// The module's base address.
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "Option<crate::hex_json::Hex>")]
    pub module_base: Option<u64>,
    /// Where this frame returns to (the next frame's instruction), when known.
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "Option<crate::hex_json::Hex>")]
    pub return_address: Option<u64>,
    /// Source file.
    pub source_file: Option<String>,
    /// Source line.
    pub source_line: Option<u32>,
    /// The stack pointer in this frame (WinDbg's Child-SP).
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "crate::hex_json::Hex")]
    pub stack_pointer: u64,
    /// How far its address was validated.
    pub trust: Trust,
}

impl Frame {
    /// Whether the frame is a fact rather than a guess: the register context, unwind data, a
    /// return address (leaf, frame pointer, scan) that follows a call instruction, or a
    /// frame-pointer chain through code outside every module that reaches module code again.
    pub fn is_trusted(&self) -> bool {
        self.trust != Trust::Unverified
    }

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
///
/// Fields are declared in name order, as [`Frame`]'s are.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Stack {
    /// Frames, innermost first.
    pub frames: Vec<Frame>,
    /// What the walk had to say, when it did: why it could not start or stopped early, and
    /// return addresses it rejected (`frame NN: …`, numbered as `kn` prints frames).
    pub note: Option<String>,
    /// The notes behind [`Stack::note`], each with the frame it concerns, if any.
    #[serde(skip)]
    pub notes: Vec<StackNote>,
    /// The thread the stack belongs to (in JSON a `0x` hex string, as every other id).
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "crate::hex_json::Hex")]
    pub thread_id: u32,
}

/// One thing the walk had to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackNote {
    /// The frame (numbered as `kn` prints it) the note is about; `None` for the whole walk.
    /// It may equal the frame count: a caller the walk looked for and did not take, or where
    /// it stopped.
    pub frame: Option<usize>,
    /// What happened, as printed.
    pub text: String,
}

impl Stack {
    /// A stack of `frames` with what the walk said about them.
    pub fn new(thread_id: u32, frames: Vec<Frame>, notes: Vec<StackNote>) -> Stack {
        let note = (!notes.is_empty()).then(|| {
            let texts: Vec<&str> = notes.iter().map(|n| n.text.as_str()).collect();
            texts.join("; ")
        });
        Stack {
            thread_id,
            frames,
            note,
            notes,
        }
    }

    /// Keeps the first `count` frames (`k 8`), with only the notes about them: a note about a
    /// frame past the cut, or about where the walk stopped, no longer applies.
    pub fn truncate(&mut self, count: usize) {
        if self.frames.len() <= count {
            return;
        }
        let notes = std::mem::take(&mut self.notes)
            .into_iter()
            .filter(|n| n.frame.is_none_or(|f| f < count))
            .collect();
        self.frames.truncate(count);
        *self = Stack::new(self.thread_id, std::mem::take(&mut self.frames), notes);
    }
}

/// One physical frame, ready to become [`Frame`]s: its registers, where it resumes, its
/// symbols and how it was found.
struct Physical {
    context: FrameContext,
    resume_address: u64,
    symbols: FrameSymbols,
    found_by: FoundBy,
    trust: Trust,
}

/// Walks the stack that `context` starts, on a thread whose stack memory the target holds, to
/// at most [`MAX_FRAMES`] physical frames.
pub fn walk(
    target: &dyn Target,
    symbols: &SymbolStore,
    thread_id: u32,
    context: &MinidumpContext,
) -> Stack {
    walk_to(target, symbols, thread_id, context, MAX_FRAMES)
}

/// Walks as [`walk`] does, to at most `limit` physical frames (at least [`MAX_FRAMES`], at most
/// [`DEEPEST_WALK`]).
pub fn walk_to(
    target: &dyn Target,
    symbols: &SymbolStore,
    thread_id: u32,
    context: &MinidumpContext,
    limit: usize,
) -> Stack {
    let limit = limit.clamp(MAX_FRAMES, DEEPEST_WALK);
    let arch = target.arch();
    let sp = context.get_stack_pointer();
    let stack = target.stack_region_at(sp).and_then(|r| {
        let len = usize::try_from(r.size).ok()?;
        let bytes = target.read_chunk(r.base, len)?;
        Some(memory::StackMemory {
            base: r.base,
            bytes,
            pointer_size: arch.pointer_size(),
        })
    });
    let thread = Arc::new(context.clone());
    let mut notes: Vec<StackNote> = Vec::new();
    let mut walker_notes = Vec::new();
    let layout = regs::layout(arch);
    let walked = match (stack, layout) {
        (Some(stack), Some(layout)) if layout.fits(context) => {
            let mut walker = walker::Walker {
                target,
                symbols,
                arch,
                layout,
                stack,
                notes: Vec::new(),
                memo: Default::default(),
                chained_records: Vec::new(),
            };
            let walked = walker.run(regs::Regs::from_context(layout, context), limit);
            walker_notes = walker.notes;
            walked
                .into_iter()
                .enumerate()
                .map(|(i, w)| Physical {
                    context: if i == 0 {
                        FrameContext::thread(thread.clone())
                    } else {
                        FrameContext::walked(thread.clone(), w.regs)
                    },
                    resume_address: w.resume_address,
                    symbols: w.symbols,
                    found_by: w.found_by,
                    trust: w.trust,
                })
                .collect()
        }
        (stack, layout) => {
            // A context of another architecture than the target's has nothing to walk by.
            if stack.is_none() {
                notes.push(StackNote {
                    frame: None,
                    text: format!(
                        "stack memory at {sp:#x} is {}: only the context frame is shown",
                        target.kind().missing_memory()
                    ),
                });
            } else if layout.is_none() {
                notes.push(StackNote {
                    frame: None,
                    text: "no stack walker for this architecture: only the context frame is shown"
                        .to_string(),
                });
            }
            let pc = context.get_instruction_pointer();
            vec![Physical {
                context: FrameContext::thread(thread),
                resume_address: pc,
                symbols: SymbolMemo::default().get(target, symbols, pc),
                found_by: FoundBy::Context,
                trust: Trust::Context,
            }]
        }
    };
    // The walker numbers physical frames; `kn` counts inlined calls too: `first_rows[n]` is
    // the row of physical frame `n` (and, past the last, the row count).
    let first_rows: Vec<usize> = std::iter::once(0)
        .chain(walked.iter().scan(0, |row, w| {
            *row += w.symbols.inlines.len() + 1;
            Some(*row)
        }))
        .collect();
    let physical_frames = walked.len();
    let frames = convert_frames(target, walked, first_rows[physical_frames]);
    notes.extend(walker_notes.into_iter().map(|(physical, text)| {
        let row = first_rows[physical.min(physical_frames)];
        StackNote {
            frame: Some(row),
            text: format!("frame {row:02x}: {text}"),
        }
    }));
    if let Some(names) = symbols.jit_names() {
        let named = frames
            .iter()
            .filter(|f| f.module_base.is_none() && f.function.is_some())
            .count();
        if named > 0 {
            notes.push(StackNote {
                frame: None,
                text: format!(
                    "{named} frame(s) outside every module named by {} ({}), whose stack matches this dump",
                    names.kind(),
                    names.source().display()
                ),
            });
        }
    }
    if physical_frames >= limit {
        let more = if limit < DEEPEST_WALK {
            " (a frame count walks further: k 0n100000)"
        } else {
            ""
        };
        notes.push(StackNote {
            frame: Some(frames.len()),
            text: format!("stopped after {limit} frames{more}"),
        });
    }
    Stack::new(thread_id, frames, notes)
}

/// Turns the walker's frames into ours (`rows` of them): inline frames split out, return
/// addresses and "args to child" filled in from the next frame. Each frame's registers move
/// into its physical frame; only inlined calls get copies.
fn convert_frames(target: &dyn Target, walked: Vec<Physical>, rows: usize) -> Vec<Frame> {
    let arch = target.arch();
    let ptr = arch.pointer_size();
    // Each frame's caller's stack pointer and return address.
    let callers: Vec<(u64, u64)> = walked
        .iter()
        .skip(1)
        .map(|c| (c.context.stack_pointer(), c.resume_address))
        .collect();
    let mut out = Vec::with_capacity(rows);
    for (i, w) in walked.into_iter().enumerate() {
        let f = w.symbols;
        let module = f.module.as_ref();
        let module_name = module.map(|m| module_name(&m.name)).or(f.jit_module);
        let module_base = module.map(|m| m.raw.base_of_image);
        let caller = callers.get(i);
        let caller_sp = caller.map(|c| c.0);
        let return_address = caller.map(|c| c.1);
        let args = caller_sp
            .map(|sp| {
                (0..4u64)
                    .filter_map(|k| target.read_uint(sp.wrapping_add(k * ptr as u64), ptr))
                    .collect()
            })
            .unwrap_or_default();
        let stack_pointer = w.context.stack_pointer();
        let frame_pointer = w.context.frame_pointer(arch);
        // Inlined calls first (innermost first), each attributed to the physical frame.
        for inline in f.inlines {
            out.push(Frame {
                index: out.len(),
                instruction: w.resume_address,
                stack_pointer,
                frame_pointer,
                return_address: None,
                module: module_name.clone(),
                module_base,
                function: Some(inline.function_name),
                function_offset: None,
                source_file: inline.source_file_name,
                source_line: inline.source_line,
                found_by: w.found_by,
                trust: w.trust,
                inline: true,
                args: Vec::new(),
                context: w.context.clone(),
            });
        }
        out.push(Frame {
            index: out.len(),
            instruction: w.resume_address,
            stack_pointer,
            frame_pointer,
            return_address,
            module: module_name,
            module_base,
            function: f.function_name,
            function_offset: f.function_base.map(|b| w.resume_address.wrapping_sub(b)),
            source_file: f.source_file_name,
            source_line: f.source_line,
            found_by: w.found_by,
            trust: w.trust,
            inline: false,
            args,
            context: w.context,
        });
    }
    out
}
