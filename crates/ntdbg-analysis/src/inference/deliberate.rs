//! Deliberate crashes: a pointer that is a constant of the code (`mov eax,4E3C9h; mov ebx,[rax]`,
//! `mov byte ptr [0],1`), a trap instruction (`ud2`, `int 3`) right after a store of a reason
//! code to a global, and breakpoints (`__debugbreak`) with no debugger attached.

use super::code::code_before;
use crate::fault::FaultingInstruction;
use crate::report::Inference;
use ntdbg_engine::disasm::{instruction_effects, Bitness, ControlFlow};
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// How many instructions before the fault are looked at.
const LOOK_BACK: usize = 8;

/// Where a faulting pointer came from, when the code itself supplies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ConstantPointer {
    /// What the basis says about it.
    pub evidence: String,
}

/// Whether the faulting instruction's address is a constant of the code: an absolute operand
/// (no base, no index), or a base register loaded with an immediate by the instructions just
/// before it in straight-line code.
pub(super) fn constant_pointer(
    session: &Session,
    event: &ExceptionEvent,
    instruction: &FaultingInstruction,
) -> Option<ConstantPointer> {
    let memory = instruction.memory.as_ref()?;
    if memory.segment.is_some() {
        return None;
    }
    match (&memory.base, &memory.index) {
        // A RIP-relative operand also has neither, but always lands inside the image.
        (None, None) if session.module_at(memory.displacement as u64).is_none() => Some(ConstantPointer {
            evidence: format!(
                "the faulting instruction `{}` encodes the address itself (no base or index register)",
                instruction.text
            ),
        }),
        (Some(base), None) => {
            let before = code_before(session, event.address, LOOK_BACK)?;
            let (writer, straight) = before.last_writer(base)?;
            let (register, value) = writer.constant.as_ref()?;
            if register != base || !straight {
                return None;
            }
            let used = instruction.base_value().map(|(_, v)| v);
            if used.is_some_and(|v| v != *value) {
                return None;
            }
            Some(ConstantPointer {
                evidence: format!(
                    "{base} was loaded with the constant {value:#x} by `{}` at {:#x}, in straight-line code before the faulting instruction `{}` ({})",
                    writer.text, writer.address, instruction.text, before.how
                ),
            })
        }
        _ => None,
    }
}

/// A store to a global right before the trap at the exception address, of an immediate or of
/// a register the context still holds: `(the store's text, the global's name or address, the
/// value, how the value is known)`.
fn reason_store(
    session: &Session,
    event: &ExceptionEvent,
) -> Option<(String, String, u64, String)> {
    let before = code_before(session, event.address, LOOK_BACK)?;
    let store_at = before.previous()?;
    let store = store_at.store.as_ref()?;
    if store.operand.base.is_some() || store.operand.index.is_some() {
        return None;
    }
    let target = store.operand.displacement as u64;
    let module = session.module_at(target)?;
    let (value, how) = match (store.immediate, &store.register) {
        (Some(v), _) => (
            v,
            "a store of an immediate to a global of the image".to_string(),
        ),
        // The trap follows the store at once, so the register still holds what was stored.
        (None, Some(r)) => {
            let v = ntdbg_engine::registers::register(event.context.as_ref()?, r)?;
            let bits = 8 * store.operand.size.clamp(1, 8) as u32;
            let v = if bits == 64 {
                v
            } else {
                v & ((1u64 << bits) - 1)
            };
            (
                v,
                format!("a store of {r} to a global of the image; {r} still holds it at the trap"),
            )
        }
        _ => return None,
    };
    let symbol = session.symbolize(target);
    let name = match (&symbol.function, symbol.function_offset) {
        (Some(f), Some(0)) => format!("{}!{f}", symbol.module.as_deref().unwrap_or("?")),
        _ => format!(
            "{target:#x} (in {})",
            ntdbg_engine::module_name(&module.name)
        ),
    };
    Some((store_at.text.clone(), name, value, how))
}

/// The trap instruction at the exception address, decoded: `ud2`, `int 3`, ….
fn trap_instruction(session: &Session, event: &ExceptionEvent) -> Option<String> {
    let bitness = Bitness::of_arch(session.arch())?;
    let bytes = session.read_code(event.address, 16)?;
    let i = instruction_effects(bitness, &bytes, event.address)?;
    (i.flow == ControlFlow::Trap).then_some(i.text)
}

/// The deliberate-crash inference when the trap follows a store of a reason code.
fn deliberate_trap(
    session: &Session,
    event: &ExceptionEvent,
    trap: &str,
    site: &str,
) -> Option<Inference> {
    let (store, global, value, how) = reason_store(session, event)?;
    Some(Inference::new(
        "deliberate",
        format!("a deliberate crash: the code stored the reason code {value:#x} to {global} and then executed `{trap}`"),
        format!("exception code {:#010x} at {site}; the instruction before the trap is `{store}` ({how})", event.code),
    ))
}

/// Inferences for `EXCEPTION_ILLEGAL_INSTRUCTION`: a `ud2` is a deliberate trap
/// (`__builtin_trap`, `__ud2`, a compiler's unreachable code).
pub(super) fn illegal_instruction(
    session: &Session,
    event: &ExceptionEvent,
    site: &str,
) -> Vec<Inference> {
    let Some(trap) = trap_instruction(session, event) else {
        return Vec::new();
    };
    if let Some(i) = deliberate_trap(session, event, &trap, site) {
        return vec![i];
    }
    vec![Inference::new(
        "deliberate",
        format!("a deliberate trap: `{trap}` executed (__builtin_trap, __ud2 or code the compiler marked unreachable)"),
        format!("exception code {:#010x} at {site}; the instruction there is `{trap}`", event.code),
    )]
}

/// Inferences for a breakpoint exception: an assertion on the stack, a reason code stored just
/// before, or a bare `__debugbreak`.
pub(super) fn breakpoint(
    session: &Session,
    event: &ExceptionEvent,
    frames: &[Frame],
    site: &str,
) -> Vec<Inference> {
    if let Some(f) = super::assertion::find_function(frames, super::assertion::ASSERT_FUNCTIONS) {
        return vec![Inference::new(
            "assertion",
            "an assertion failed and broke into the (absent) debugger",
            format!("exception code {:#010x}; {f} is on the stack", event.code),
        )];
    }
    let trap = trap_instruction(session, event);
    if let Some(i) = trap
        .as_deref()
        .and_then(|t| deliberate_trap(session, event, t, site))
    {
        return vec![i];
    }
    let what = match &trap {
        Some(t) => format!("; the instruction there is `{t}`"),
        None => String::new(),
    };
    vec![Inference::new(
        "breakpoint",
        "a breakpoint instruction (int 3 / __debugbreak / brk) executed with no debugger attached",
        format!("exception code {:#010x} at {site}{what}", event.code),
    )]
}
