//! The call chain: the function each frame called, read from the call instruction before the
//! frame's return address and named through the symbols, the caller's import table
//! (`call [__imp_HeapAlloc]` → `KERNEL32.dll!HeapAlloc`) or an import thunk (`jmp [slot]`). A
//! fault inside the heap, a C runtime check, `abort`, a throw or the loader is then recognised
//! by what the program called, with or without symbols for the system modules.

use super::code::function_at;
use super::imports::ImportNames;
use ntdbg_engine::disasm::{
    instruction_effects, Bitness, ControlFlow, InstructionEffects, Operand,
};
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;

/// Longest x86 instruction: the bytes read before a return address for its call.
const CALL_BYTES: u64 = 15;
/// Frames whose calls are read.
const MAX_FRAMES: usize = 32;

/// A call instruction and what it called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    /// The address of the call instruction.
    pub at: u64,
    /// Its text (`call qword ptr [rip+1234h]`).
    pub text: String,
    /// The callee, named (`KERNEL32.dll!HeapAlloc`, `app!parse`), when it could be.
    pub callee: Option<String>,
    /// How the callee was named.
    pub how: String,
}

impl Call {
    /// The callee's bare function name (`HeapAlloc`), without module or parameters.
    pub fn function(&self) -> Option<&str> {
        let name = self.callee.as_deref()?;
        let bare = name.rsplit('!').next().unwrap_or(name);
        Some(ntdbg_symbols::strip_parameters(bare))
    }
}

/// The call each of the first frames made: frame `k`'s return address follows the call that
/// created frame `k - 1`. Pairs of (frame index of the caller, call).
pub(crate) fn call_chain(
    session: &Session,
    imports: &ImportNames,
    frames: &[Frame],
) -> Vec<(usize, Call)> {
    frames
        .iter()
        .skip(1)
        .take(MAX_FRAMES)
        .filter_map(|f| Some((f.index, call_before(session, imports, f.instruction)?)))
        .collect()
}

/// The call instruction that ends at `return_address`, and its callee.
pub(crate) fn call_before(
    session: &Session,
    imports: &ImportNames,
    return_address: u64,
) -> Option<Call> {
    let bitness = Bitness::of_arch(session.arch())?;
    let start = return_address.saturating_sub(CALL_BYTES);
    let bytes = session.read_code(start, CALL_BYTES as usize)?;
    let call = call_ending_at(bitness, start, &bytes, return_address)?;
    let at = call.address;
    let (callee, how) = match (call.flow, call.operands.first()) {
        (ControlFlow::Call { target: Some(t) }, _) => direct(session, imports, bitness, t),
        (_, Some(Operand::Memory(m))) if m.base.is_none() && m.index.is_none() => {
            let slot = m.displacement as u64;
            (
                slot_callee(session, imports, slot),
                format!("through the pointer at {slot:#x}"),
            )
        }
        (_, Some(Operand::Register(r))) => through_register(session, imports, at, r),
        _ => (None, "an indirect call".to_string()),
    };
    Some(Call {
        at,
        text: call.text,
        callee,
        how,
    })
}

/// The call instruction that ends exactly at `return_address` among `bytes` (read from
/// `start`). Every call encoding is tried by its length (`call rax` is 2 bytes, `call r14` 3,
/// `call rel32` 5, `call [rip+X]` 6, with a prefix 7), so that no backward guess can fall out
/// of step: of the lengths that decode to a call of exactly that length and start with the
/// call opcode or only harmless prefixes (REX, segment `cs:`/`ds:` — `notrack`), the longest
/// wins (`41 ff d6` is `call r14`, not the `call rsi` its last two bytes also decode to).
pub(crate) fn call_ending_at(
    bitness: Bitness,
    start: u64,
    bytes: &[u8],
    return_address: u64,
) -> Option<InstructionEffects> {
    let available = usize::try_from(return_address.checked_sub(start)?).ok()?;
    let benign = |b: u8| {
        b == 0x2e || b == 0x3e || (bitness == Bitness::Bits64 && (0x40..=0x4f).contains(&b))
    };
    (2..=available.min(CALL_BYTES as usize))
        .rev()
        .find_map(|len| {
            let code = bytes.get(available - len..available)?;
            let opcode = code.iter().position(|b| matches!(b, 0xe8 | 0xff | 0x9a))?;
            if !code[..opcode].iter().all(|b| benign(*b)) {
                return None;
            }
            let i = instruction_effects(bitness, code, return_address - len as u64)?;
            (i.len == len && matches!(i.flow, ControlFlow::Call { .. })).then_some(i)
        })
}

/// `call r14`: the register's value traced back in the caller's code; named when it was loaded
/// from an import slot or a function's address.
fn through_register(
    session: &Session,
    imports: &ImportNames,
    at: u64,
    register: &str,
) -> (Option<String>, String) {
    /// Instructions before the call looked at.
    const LOOK_BACK: usize = 40;
    let how = format!("through the register {register}");
    let Some(code) = super::code::code_before(session, at, LOOK_BACK) else {
        return (None, how);
    };
    let Some(trace) = super::dataflow::trace(session, &code, register, &|_| None)
        .filter(|t| t.certainty == super::code::Certainty::Certain)
    else {
        return (None, how);
    };
    match trace.origin {
        super::dataflow::Origin::Global { address, .. } => (
            slot_callee(session, imports, address),
            format!(
                "{how}, loaded from the pointer at {address:#x} ({})",
                trace.steps.join(" <- ")
            ),
        ),
        super::dataflow::Origin::Constant(target) | super::dataflow::Origin::AddressOf(target) => (
            function_at(session, target),
            format!("{how}, set to {target:#x} ({})", trace.steps.join(" <- ")),
        ),
        _ => (None, how),
    }
}

/// A direct call to `target`: the function there, or what an import thunk (`jmp [slot]`) at
/// `target` jumps to.
fn direct(
    session: &Session,
    imports: &ImportNames,
    bitness: Bitness,
    target: u64,
) -> (Option<String>, String) {
    let thunk = session
        .read_code(target, 16)
        .and_then(|b| instruction_effects(bitness, &b, target))
        .and_then(|j| match (j.flow, j.operands.first()) {
            (ControlFlow::Jump { target: None, .. }, Some(Operand::Memory(m)))
                if m.base.is_none() && m.index.is_none() =>
            {
                Some(m.displacement as u64)
            }
            _ => None,
        });
    if let Some(slot) = thunk {
        if let Some(name) = slot_callee(session, imports, slot) {
            return (
                Some(name),
                format!("a direct call to the import thunk at {target:#x}"),
            );
        }
    }
    (
        function_at(session, target),
        format!("a direct call to {target:#x}"),
    )
}

/// The function an import slot calls: by the module's import table, else by the pointer the
/// dump holds in the slot, else by the slot's own symbol (`__imp_HeapAlloc`).
fn slot_callee(session: &Session, imports: &ImportNames, slot: u64) -> Option<String> {
    if let Some(name) = imports.slot_name(session, slot) {
        return Some(name);
    }
    let ptr = session.arch().pointer_size();
    let value: Option<Vec<u8>> = session
        .target()
        .read_virtual(slot, ptr)
        .into_iter()
        .collect();
    if let Some(bytes) = value {
        let mut buf = [0u8; 8];
        buf[..ptr].copy_from_slice(&bytes);
        if let Some(name) = function_at(session, u64::from_le_bytes(buf)) {
            return Some(name);
        }
    }
    let s = session.symbolize(slot);
    let f = s.function.filter(|_| s.function_offset == Some(0))?;
    let name = f.strip_prefix("__imp_").unwrap_or(&f);
    Some(format!("{}!{name}", s.module.as_deref().unwrap_or("?")))
}
