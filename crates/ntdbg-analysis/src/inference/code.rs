//! The code that ran just before an address: the instructions of its function that lead to
//! it, each with its effects, and whether anything else can jump in between. Two ways to find
//! them, and the result says which: decoded from the function's start (its range from the
//! symbols), or, without a known start, decoded backwards with `ub`'s heuristic.

use ntdbg_engine::disasm::{
    decode_run, disassemble_backward, instruction_effects, Bitness, CodeMemory, ControlFlow,
    InstructionEffects, NoSymbols,
};
use ntdbg_engine::Session;

/// Largest function decoded whole.
const MAX_FUNCTION_BYTES: u64 = 64 * 1024;

/// The instructions before an address.
#[derive(Debug, Clone)]
pub(super) struct CodeBefore {
    /// The instructions that end exactly at the address, in address order.
    pub instructions: Vec<InstructionEffects>,
    /// Direct jump targets inside the function, when it was decoded whole; `None` when
    /// control could also arrive from places not known (no function range, an indirect jump).
    pub jump_targets: Option<Vec<u64>>,
    /// How the instructions were found, for a basis.
    pub how: &'static str,
}

impl CodeBefore {
    /// The last instruction before the address that writes `register`, and whether the
    /// instructions after it up to the address are straight-line code no known jump enters.
    pub fn last_writer(&self, register: &str) -> Option<(&InstructionEffects, bool)> {
        let index = self
            .instructions
            .iter()
            .rposition(|i| i.written.iter().any(|w| w == register))?;
        let writer = &self.instructions[index];
        let later = &self.instructions[index + 1..];
        let no_branch_out = later
            .iter()
            .all(|i| matches!(i.flow, ControlFlow::Next | ControlFlow::Call { .. }));
        let calls = later
            .iter()
            .any(|i| matches!(i.flow, ControlFlow::Call { .. }));
        let entered = match &self.jump_targets {
            Some(targets) => {
                later.iter().any(|i| targets.contains(&i.address)) || targets.contains(&self.end())
            }
            // Without the whole function only the adjacent instruction is certain: nothing lies
            // between it and the address, but the address itself may be a jump target.
            None => !later.is_empty(),
        };
        Some((writer, no_branch_out && !calls && !entered))
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
pub(super) fn code_before(session: &Session, at: u64, count: usize) -> Option<CodeBefore> {
    let bitness = Bitness::of_arch(session.arch())?;
    if let Some(found) = from_function_start(session, bitness, at, count) {
        return Some(found);
    }
    let lines = disassemble_backward(bitness, &Code(session), &NoSymbols, at, count);
    let mut instructions = Vec::new();
    for line in lines.iter().filter(|l| l.readable && l.address < at) {
        let bytes = session.read_code(line.address, 16)?;
        instructions.push(instruction_effects(bitness, &bytes, line.address)?);
    }
    let lands = instructions
        .last()
        .is_some_and(|i| i.address + i.len as u64 == at);
    lands.then_some(CodeBefore {
        instructions,
        jump_targets: None,
        how: "decoded backwards from the fault (no function start known)",
    })
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
    Some(CodeBefore {
        instructions: run[position.saturating_sub(count)..position].to_vec(),
        jump_targets: (!indirect).then_some(targets),
        how: "decoded from the function's start",
    })
}
