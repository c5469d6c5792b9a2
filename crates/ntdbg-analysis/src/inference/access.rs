//! Access violations: what the inaccessible address is, and the best explanation the dump
//! proves — the heap manager faulting on its own metadata, a fill pattern, a constant address
//! of the code, a NULL base, a possible bit flip — before the generic classes.

use super::deliberate::constant_pointer;
use super::fill_pattern::{fill_pattern, FillPattern};
use super::{bit_flip, heap};
use crate::exception::Access;
use crate::fault::{classify_address, faulting_instruction, AddressClass, FaultingInstruction};
use crate::report::Inference;
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;
use ntdbg_targets::{Arch, ExceptionEvent};

/// What Windows reports as the address of a general-protection fault (a non-canonical access).
const GP_FAULT_ADDRESS: u64 = u64::MAX;

/// Inferences for an access violation at `target`.
pub(super) fn access_violation(
    session: &Session,
    event: &ExceptionEvent,
    access: Option<Access>,
    target: u64,
    site: &str,
    frames: &[Frame],
) -> Vec<Inference> {
    let verb = access.map(Access::name).unwrap_or("access");
    let instruction = faulting_instruction(session, event);
    let ptr = session.arch().pointer_size();
    let mut out = Vec::new();

    // A general-protection fault reports 0xffffffffffffffff; the operand says what was used.
    let computed = instruction
        .as_ref()
        .and_then(FaultingInstruction::effective_address)
        .filter(|_| session.arch() == Arch::X64 && target == GP_FAULT_ADDRESS)
        .filter(|a| is_non_canonical(*a));
    let address = computed.unwrap_or(target);
    let gp_note = computed
        .map(|a| format!("; the exception record gives {GP_FAULT_ADDRESS:#x}, as for any general-protection fault, and the operand computes to {a:#x}"))
        .unwrap_or_default();

    let pattern = pattern_in(address, instruction.as_ref(), ptr);
    if let Some(i) = heap::heap_manager_fault(frames, instruction.as_ref(), pattern.as_ref()) {
        out.push(i);
        return out;
    }
    let class = classify_address(session, address, Some(event.thread_id));
    // An ASCII address is its own class (below), with the wording the corpus already has.
    if let Some((place, p)) = pattern
        .as_ref()
        .filter(|_| !matches!(class, AddressClass::Ascii { .. }))
    {
        let hypothesis = match p.hypothesis {
            "use_after_free" => "a use after free: the pointer was read from memory already freed",
            "uninitialized" => "an uninitialised pointer: read from memory never written",
            _ => "a buffer overflow: data was written over the pointer",
        };
        out.push(Inference::new(
            "fill_pattern",
            format!("{verb} through a pointer made of the fill pattern {} ({}): {hypothesis} (hypothesis)", p.name, p.meaning),
            format!("{place} holds {}{gp_note}; at {site}{}", p.name, instr_basis(instruction.as_ref())),
        ));
        return out;
    }
    let constant = instruction
        .as_ref()
        .and_then(|i| constant_pointer(session, event, i))
        .filter(|_| {
            matches!(
                class,
                AddressClass::Null
                    | AddressClass::NearNull { .. }
                    | AddressClass::Unknown
                    | AddressClass::Kernel
                    | AddressClass::NonCanonical
            )
        });
    if let Some(c) = constant {
        let text = match &class {
            AddressClass::Null => format!("null pointer dereference: {verb} of the constant address 0x0, which the code itself supplies: a deliberate crash or a hard-coded bad pointer"),
            AddressClass::NearNull { .. } => format!("{verb} of the constant address {address:#x} in the never-mapped NULL page: a deliberate crash or a hard-coded bad pointer"),
            _ => format!("{verb} of the constant address {address:#x} that nothing in the dump maps: a deliberate crash or a hard-coded bad pointer, not a freed or corrupted one"),
        };
        out.push(Inference::new(
            "constant_address",
            text,
            format!(
                "access violation parameters: {verb} at {target:#x}; {}; at {site}{}",
                c.evidence,
                instr_basis(instruction.as_ref())
            ),
        ));
        return out;
    }
    out.push(classified(
        verb,
        target,
        address,
        &class,
        site,
        instruction.as_ref(),
        &gp_note,
        access,
    ));
    if matches!(
        class,
        AddressClass::Unknown | AddressClass::NonCanonical | AddressClass::Kernel
    ) {
        let base = instruction
            .as_ref()
            .and_then(|i| i.base_value())
            .filter(|(_, v)| {
                *v != address
                    && !matches!(
                        classify_address(session, *v, None),
                        AddressClass::Stack { .. } | AddressClass::Image { .. }
                    )
            });
        let flip = bit_flip::bit_flip(session, event, address, None)
            .or_else(|| base.and_then(|(r, v)| bit_flip::bit_flip(session, event, v, Some(r))));
        out.extend(flip);
    }
    out
}

/// Whether `a` is outside both canonical halves of the x64 address space.
fn is_non_canonical(a: u64) -> bool {
    a > 0x0000_7FFF_FFFF_FFFF && a < 0xFFFF_8000_0000_0000
}

/// A fill pattern in the address (less the operand's displacement) or in the faulting
/// instruction's base or index register: `(where, pattern)`.
fn pattern_in(
    address: u64,
    instruction: Option<&FaultingInstruction>,
    ptr: usize,
) -> Option<(String, FillPattern)> {
    if let Some(i) = instruction {
        let m = i.memory.as_ref();
        for r in m.iter().flat_map(|m| m.base.iter().chain(m.index.iter())) {
            if let Some(p) = i.value_of(r).and_then(|v| fill_pattern(v, ptr)) {
                return Some((r.clone(), p));
            }
        }
    }
    let displacement = instruction
        .and_then(|i| i.memory.as_ref())
        .map(|m| m.displacement as u64)
        .unwrap_or(0);
    fill_pattern(address.wrapping_sub(displacement), ptr)
        .or_else(|| fill_pattern(address, ptr))
        .map(|p| (format!("the faulting address {address:#x}"), p))
}

fn instr_basis(instruction: Option<&FaultingInstruction>) -> String {
    instruction
        .map(|i| format!("; faulting instruction {}", i.summary()))
        .unwrap_or_default()
}

/// The inference from the address's class alone.
#[allow(clippy::too_many_arguments)]
fn classified(
    verb: &str,
    target: u64,
    address: u64,
    class: &AddressClass,
    site: &str,
    instruction: Option<&FaultingInstruction>,
    gp_note: &str,
    access: Option<Access>,
) -> Inference {
    let instr = instr_basis(instruction);
    let params = format!("access violation parameters: {verb} at {target:#x}");
    let (kind, text, basis) = match (class, access) {
        (AddressClass::Null, _) => (
            "null_deref",
            format!("null pointer dereference: {verb} through a NULL pointer"),
            format!("{params}, inside the never-mapped first 64 KiB; at {site}{instr}"),
        ),
        (AddressClass::NearNull { offset }, _) => (
            "null_deref",
            format!("null pointer dereference: {verb} at {offset:#x} = struct offset {offset:#x} from a NULL base"),
            format!("{params}, inside the never-mapped first 64 KiB; at {site}{instr}"),
        ),
        (_, Some(Access::Execute)) => (
            "access_violation",
            format!("execution of non-executable memory (DEP) at {}: a corrupted function pointer or return address", class.describe()),
            format!("access violation parameter 0 = 8 (execute) at {target:#x}{instr}"),
        ),
        (AddressClass::NonCanonical, _) => (
            "access_violation",
            format!("{verb} of a non-canonical address: a corrupted or uninitialised pointer"),
            format!("{address:#x} is outside the canonical x64 address space{gp_note}{instr}"),
        ),
        (AddressClass::Ascii { text }, _) => (
            "fill_pattern",
            format!("{verb} through a pointer made of ASCII bytes \"{text}\": memory overwritten by string data (buffer overflow); likely exploitable"),
            format!("every byte of {target:#x} is a printable character{instr}"),
        ),
        (AddressClass::Stack { .. }, _) => (
            "access_violation",
            format!("invalid {verb} of {}: a stack guard page or a pointer to a dead stack frame", class.describe()),
            format!("{target:#x} lies in a thread's stack range{instr}"),
        ),
        (AddressClass::Image { .. }, Some(Access::Write)) => (
            "access_violation",
            format!("write into {}: a write to read-only data or code", class.describe()),
            format!("{target:#x} lies inside a loaded module{instr}"),
        ),
        (AddressClass::Image { .. }, _) => (
            "access_violation",
            format!("invalid {verb} inside {}", class.describe()),
            format!("{target:#x} lies inside a loaded module{instr}"),
        ),
        (AddressClass::Kernel, _) => (
            "access_violation",
            format!("{verb} of kernel address space from user mode: a corrupted pointer"),
            format!("{target:#x} is in the kernel half of the address space{instr}"),
        ),
        (AddressClass::Unknown, _) => (
            "access_violation",
            format!("invalid {verb} of {address:#x}: a dangling, freed or corrupted pointer is likely"),
            format!("the address is not NULL-relative and no module or thread stack in the dump contains it{instr}"),
        ),
    };
    Inference::new(kind, text, basis)
}
