//! The code that ran just before an address: the instructions of its function that lead to
//! it, each with its effects, and whether anything else can jump in between. Two ways to find
//! them, and the result says which: decoded from the function's start (its range from the
//! symbols), or, without a known start, decoded backwards with `ub`'s heuristic.

use ntdbg_engine::disasm::{
    decode_run, disassemble_backward, instruction_effects, Bitness, CodeMemory, ControlFlow,
    InstructionEffects, NoSymbols, Operand,
};
use ntdbg_engine::Session;

/// Largest function decoded whole.
const MAX_FUNCTION_BYTES: u64 = 64 * 1024;

/// How sure a backward step is that the instruction found really produced the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Certainty {
    /// Straight-line code from the writer to the use that no known jump enters, decoded from
    /// the function's start; or the writer right before the use.
    Certain,
    /// The code was decoded backwards without the function's start: a jump from outside the
    /// decoded window could enter between the writer and the use.
    Window,
}

/// The instructions before an address.
#[derive(Debug, Clone)]
pub(crate) struct CodeBefore {
    /// The instructions that end exactly at the address, in address order.
    pub instructions: Vec<InstructionEffects>,
    /// Direct jump targets inside the function, when it was decoded whole; `None` when
    /// control could also arrive from places not known (no function range, an indirect jump).
    pub jump_targets: Option<Vec<u64>>,
    /// Whether `instructions[0]` is the function's first instruction.
    pub from_entry: bool,
    /// How the instructions were found, for a basis.
    pub how: &'static str,
}

impl CodeBefore {
    /// Whether any instruction before `instructions[end]` writes `register` (a call counts for
    /// a volatile one).
    pub fn written_before(&self, register: &str, end: usize) -> bool {
        self.instructions[..end.min(self.instructions.len())]
            .iter()
            .any(|i| {
                i.written.iter().any(|w| w == register)
                    || (matches!(i.flow, ControlFlow::Call { .. }) && is_volatile(register))
            })
    }

    /// The index of the last instruction before `instructions[end]` (or the address, for
    /// `end == len`) that writes `register`, when every instruction between them falls
    /// through to the next, none of them is a call (it would clobber the register or return
    /// it) and no known jump lands between: with what certainty. `None` when no instruction
    /// of the window writes it, or the path from the writer is not straight.
    pub fn writer_before(&self, register: &str, end: usize) -> Option<(usize, Certainty)> {
        let end = end.min(self.instructions.len());
        // A call writes the registers a callee may change (its return value among them).
        let index = self.instructions[..end].iter().rposition(|i| {
            i.written.iter().any(|w| w == register)
                || (matches!(i.flow, ControlFlow::Call { .. }) && is_volatile(register))
        })?;
        let between = &self.instructions[index + 1..end];
        let straight = between.iter().all(|i| match i.flow {
            ControlFlow::Next => true,
            // A callee preserves the non-volatile registers.
            ControlFlow::Call { .. } => !is_volatile(register),
            // A conditional jump that was not taken lets the path through.
            ControlFlow::Jump {
                conditional: true, ..
            } => true,
            _ => false,
        });
        if !straight {
            return None;
        }
        // Known targets: the whole function's, else those of the jumps the window holds.
        let window_targets: Vec<u64> = self
            .instructions
            .iter()
            .filter_map(|i| match i.flow {
                ControlFlow::Jump { target, .. } => target,
                _ => None,
            })
            .collect();
        let lands_at = |a: u64| match &self.jump_targets {
            Some(targets) => targets.contains(&a),
            None => window_targets.contains(&a),
        };
        let end_address = self
            .instructions
            .get(end)
            .map(|i| i.address)
            .unwrap_or_else(|| self.end());
        let entered = between.iter().any(|i| lands_at(i.address)) || lands_at(end_address);
        if entered {
            return None;
        }
        // Without the whole function only the adjacent writer is certain: nothing lies between
        // it and the use (a jump straight to the use is checked by the caller against the
        // value the context holds).
        let certainty = if self.jump_targets.is_some() || index + 1 == end {
            Certainty::Certain
        } else {
            Certainty::Window
        };
        Some((index, certainty))
    }

    /// For each instruction, the stack pointer's and the frame pointer's offsets from the
    /// stack pointer at the function's entry before it runs, followed through `push`, `pop`,
    /// `sub`/`add rsp,imm` and `mov rbp,rsp` / `lea rbp,[rsp+X]`: `(sp, fp)`. Empty unless the
    /// window starts at the entry; an offset becomes unknown after anything else that writes
    /// the register.
    pub fn frame_offsets(&self, pointer: usize) -> Vec<(Option<i64>, Option<i64>)> {
        if !self.from_entry {
            return Vec::new();
        }
        let (sp_name, fp_name) = if pointer == 8 {
            ("rsp", "rbp")
        } else {
            ("esp", "ebp")
        };
        let ptr = pointer as i64;
        let (mut sp, mut fp): (Option<i64>, Option<i64>) = (Some(0), None);
        let mut out = Vec::with_capacity(self.instructions.len());
        for i in &self.instructions {
            out.push((sp, fp));
            let imm = |n: usize| match i.operands.get(n) {
                Some(Operand::Immediate(v)) => Some(*v as i64),
                _ => None,
            };
            let to_sp = matches!(i.operands.first(), Some(Operand::Register(r)) if r == sp_name);
            let to_fp = matches!(i.operands.first(), Some(Operand::Register(r)) if r == fp_name);
            let from =
                |name: &str| matches!(i.operands.get(1), Some(Operand::Register(r)) if r == name);
            match i.mnemonic.as_str() {
                "push" => sp = sp.map(|s| s - ptr),
                "pop" => {
                    sp = sp.map(|s| s + ptr);
                    if to_fp {
                        fp = None;
                    }
                }
                "sub" if to_sp => sp = sp.zip(imm(1)).map(|(s, v)| s - v),
                "add" if to_sp => sp = sp.zip(imm(1)).map(|(s, v)| s + v),
                "mov" if to_fp && from(sp_name) => fp = sp,
                "lea" if to_fp => {
                    fp = match i.operands.get(1) {
                        Some(Operand::Memory(m))
                            if m.base.as_deref() == Some(sp_name) && m.index.is_none() =>
                        {
                            sp.map(|s| s + m.displacement)
                        }
                        _ => None,
                    }
                }
                _ => {
                    if i.written.iter().any(|w| w == sp_name) {
                        sp = None;
                    }
                    if i.written.iter().any(|w| w == fp_name) {
                        fp = None;
                    }
                }
            }
        }
        out
    }

    /// The address the instructions lead to.
    fn end(&self) -> u64 {
        self.instructions
            .last()
            .map(|i| i.address + i.len as u64)
            .unwrap_or(0)
    }

    /// The instruction just before the address.
    pub fn previous(&self) -> Option<&InstructionEffects> {
        self.instructions.last()
    }
}

/// Whether a callee may change `register` (the volatile registers of the Windows x64 and x86
/// calling conventions).
pub(crate) fn is_volatile(register: &str) -> bool {
    matches!(
        register,
        "rax" | "rcx" | "rdx" | "r8" | "r9" | "r10" | "r11" | "eax" | "ecx" | "edx"
    )
}

/// The session's code bytes (the dump's, else the image's on the symbol path).
struct Code<'a>(&'a Session);

impl CodeMemory for Code<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        match self.0.read_code(addr, buf.len()) {
            Some(chunk) => {
                let n = chunk.len().min(buf.len());
                buf[..n].copy_from_slice(&chunk[..n]);
                n
            }
            None => 0,
        }
    }
}

/// Up to `count` instructions that end exactly at `at` (x86/x64 only).
pub(crate) fn code_before(session: &Session, at: u64, count: usize) -> Option<CodeBefore> {
    let bitness = Bitness::of_arch(session.arch())?;
    if let Some(found) = from_function_start(session, bitness, at, count) {
        return Some(found);
    }
    // `ub`'s heuristic may fall out of step over a long window: the longest run that ends
    // exactly at `at` among a few window lengths.
    let instructions = [count, count / 2, count / 4]
        .into_iter()
        .filter(|n| *n > 0)
        .map(|n| backward_run(session, bitness, at, n))
        .max_by_key(Vec::len)?;
    (!instructions.is_empty()).then_some(CodeBefore {
        instructions,
        jump_targets: None,
        from_entry: false,
        how: "decoded backwards from the fault (no function start known)",
    })
}

/// The decodable instructions of `ub`'s window of `count` that run without a gap up to `at`
/// (the window's first lines may be unreadable or decode out of step).
fn backward_run(
    session: &Session,
    bitness: Bitness,
    at: u64,
    count: usize,
) -> Vec<InstructionEffects> {
    let lines = disassemble_backward(bitness, &Code(session), &NoSymbols, at, count);
    let mut run: Vec<InstructionEffects> = Vec::new();
    for line in lines.iter().rev().filter(|l| l.address < at) {
        let expected = run.first().map_or(at, |i| i.address);
        let decoded = line
            .readable
            .then(|| session.read_code(line.address, 16))
            .flatten()
            .and_then(|bytes| instruction_effects(bitness, &bytes, line.address))
            .filter(|i| i.address + i.len as u64 == expected);
        match decoded {
            Some(i) => run.insert(0, i),
            None => break,
        }
    }
    run
}

/// The function holding `at`, decoded from its start (range from the symbols).
fn from_function_start(
    session: &Session,
    bitness: Bitness,
    at: u64,
    count: usize,
) -> Option<CodeBefore> {
    let module = session.module_at(at)?;
    let base = module.raw.base_of_image;
    let (start, end) = session.module_symbols(module).function_range(at - base)?;
    let (start, end) = (base + start, base + end);
    if !(start < at && at < end) || end - start > MAX_FUNCTION_BYTES {
        return None;
    }
    let bytes = session.read_code(start, usize::try_from(end - start).ok()?)?;
    let run = decode_run(bitness, &bytes, start);
    let position = run.iter().position(|i| i.address == at)?;
    let indirect = run
        .iter()
        .any(|i| matches!(i.flow, ControlFlow::Jump { target: None, .. }));
    let targets: Vec<u64> = run
        .iter()
        .filter_map(|i| match i.flow {
            ControlFlow::Jump { target, .. } => target,
            _ => None,
        })
        .collect();
    let first = position.saturating_sub(count);
    Some(CodeBefore {
        instructions: run[first..position].to_vec(),
        jump_targets: (!indirect).then_some(targets),
        from_entry: first == 0,
        how: "decoded from the function's start",
    })
}

/// `module!function` when a symbol starts exactly at `address`.
pub(crate) fn function_at(session: &Session, address: u64) -> Option<String> {
    let s = session.symbolize(address);
    let f = s
        .function
        .as_deref()
        .filter(|_| s.function_offset == Some(0))?;
    Some(format!(
        "{}!{}",
        s.module.as_deref().unwrap_or("?"),
        ntdbg_symbols::strip_parameters(f)
    ))
}
