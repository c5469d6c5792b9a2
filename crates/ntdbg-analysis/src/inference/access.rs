//! Access violations: what the inaccessible address is and the best explanation the dump
//! proves, most specific first — the heap manager faulting on its own metadata, a constant of
//! the code, an access that ran over a page boundary out of a buffer, reserved memory under
//! commit exhaustion, a fill pattern, a NULL base — before the generic classes, which are
//! worded as hypotheses with their alternatives.

use super::fill_pattern::{fill_pattern, FillPattern};
use super::{bit_flip, heap};
use crate::conclusion::Inference;
use crate::evidence::dataflow::{Origin, Trace};
use crate::evidence::regions::{self, RegionState};
use crate::evidence::Evidence;
use crate::exception::Access;
use crate::fault::{classify_address, AddressClass, FaultingInstruction};
use ntdbg_engine::stack::Frame;
use ntdbg_targets::Arch;

/// What Windows reports as the address of a general-protection fault (a non-canonical access).
const GP_FAULT_ADDRESS: u64 = u64::MAX;

/// The facts of one access violation the inferences share.
struct Fault<'e, 'a> {
    evidence: &'e Evidence<'a>,
    /// `read`, `write`, `execute` or `access`.
    verb: &'static str,
    /// The address the record gives.
    target: u64,
    /// The address really accessed (the operand's for a general-protection fault).
    address: u64,
    /// `; the exception record gives …` for a general-protection fault.
    gp_note: String,
    /// `at app!f+0x10`.
    site: String,
    /// Where the operand's registers came from.
    traces: Vec<Trace>,
}

impl Fault<'_, '_> {
    fn instruction(&self) -> Option<&FaultingInstruction> {
        self.evidence.instruction.as_ref()
    }

    /// `; faulting instruction mov … with rax=0`.
    fn instr_basis(&self) -> String {
        instr_basis(self.instruction())
    }

    /// `; rax <- mov rax,qword ptr [rbx+8] at 0x… (…)` for every traced register.
    fn trace_basis(&self) -> String {
        self.traces
            .iter()
            .map(|t| format!("; {}", t.basis()))
            .collect()
    }

    /// The origin of the operand's base (else index) register, in words.
    fn origin_clause(&self) -> String {
        let certain = self
            .traces
            .first()
            .filter(|t| t.certainty == crate::evidence::code::Certainty::Certain);
        match certain {
            Some(t) => format!(
                "; the pointer ({}) came from {}",
                t.register,
                t.origin.describe()
            ),
            None => String::new(),
        }
    }
}

/// Inferences for an access violation at `target` (`access` as the record gives it).
pub(super) fn access_violation(
    evidence: &Evidence,
    access: Option<Access>,
    target: u64,
    site: &str,
    frames: &[Frame],
) -> Vec<Inference> {
    let session = evidence.session;
    let instruction = evidence.instruction.as_ref();
    let ptr = session.arch().pointer_size();

    // A general-protection fault reports 0xffffffffffffffff and "read"; the operand says what
    // address was used and the instruction whether it wrote.
    let computed = instruction
        .and_then(FaultingInstruction::effective_address)
        .filter(|_| session.arch() == Arch::X64 && target == GP_FAULT_ADDRESS)
        .filter(|a| is_non_canonical(*a));
    let gp_write = computed.is_some() && evidence.instruction_writes() == Some(true);
    let verb = match (access, gp_write) {
        (_, true) => "write",
        (Some(a), false) => a.name(),
        (None, false) => "access",
    };
    let address = computed.unwrap_or(target);
    let gp_note = computed
        .map(|a| {
            let kind = if gp_write {
                ", and the instruction writes to its memory operand (the record says read for any general-protection fault)"
            } else {
                ""
            };
            format!("; the exception record gives {GP_FAULT_ADDRESS:#x}, as for any general-protection fault, and the operand computes to {a:#x}{kind}")
        })
        .unwrap_or_default();
    let fault = Fault {
        evidence,
        verb,
        target,
        address,
        gp_note,
        site: site.to_string(),
        traces: evidence.operand_traces(),
    };

    let pattern = pattern_in(address, instruction, ptr);
    if let Some(i) = heap::heap_manager_fault(evidence, frames, instruction, pattern.as_ref()) {
        return vec![i];
    }
    let class = classify_address(session, address, Some(evidence.event.thread_id));
    if access != Some(Access::Execute) {
        if let Some(i) = constant(&fault, &class) {
            return vec![i];
        }
    }
    // A reservation the commit limit left uncommitted explains a page-aligned fault better
    // than an overrun does.
    if let Some(i) = uncommitted(&fault).filter(|i| i.kind == "out_of_memory") {
        return vec![i];
    }
    if let Some(i) = overrun(&fault) {
        return vec![i];
    }
    if let Some(i) = uncommitted(&fault) {
        return vec![i];
    }
    if let Some(i) = pattern
        .as_ref()
        .filter(|_| !matches!(class, AddressClass::Ascii { .. }))
        .map(|(place, p)| fill(&fault, place, p))
    {
        return vec![i];
    }
    let mut out = vec![classified(&fault, &class, access)];
    let explained = fault.traces.iter().any(|t| {
        matches!(
            t.origin,
            Origin::Constant(_) | Origin::Computed { index: Some(_), .. }
        )
    });
    if !explained
        && matches!(
            class,
            AddressClass::Unknown | AddressClass::NonCanonical | AddressClass::Kernel
        )
    {
        let base = instruction.and_then(|i| i.base_value()).filter(|(_, v)| {
            *v != address
                && !matches!(
                    classify_address(session, *v, None),
                    AddressClass::Stack { .. } | AddressClass::Image { .. }
                )
        });
        let event = evidence.event;
        let flip = bit_flip::bit_flip(session, event, address, None)
            .or_else(|| base.and_then(|(r, v)| bit_flip::bit_flip(session, event, v, Some(r))));
        out.extend(flip);
    }
    out
}

/// The address is a constant of the code (plus a small offset): a deliberate crash or a
/// hard-coded bad or poison pointer, whatever its bytes look like.
fn constant(fault: &Fault, class: &AddressClass) -> Option<Inference> {
    let (value, how) = fault.evidence.constant_address(fault.address)?;
    let verb = fault.verb;
    let address = fault.address;
    let text = match class {
        AddressClass::Null => format!("null pointer dereference: {verb} of the constant address 0x0, which the code itself supplies: a deliberate crash or a hard-coded bad pointer"),
        AddressClass::NearNull { .. } => format!("{verb} of the constant address {address:#x} in the never-mapped NULL page, which the code itself supplies: a deliberate crash or a hard-coded bad pointer"),
        _ if value != address => format!("{verb} of {address:#x}, the constant {value:#x} of the code plus a small offset: a deliberate crash or a hard-coded bad or poison pointer, not a freed or overwritten one"),
        _ => format!("{verb} of the constant address {address:#x}, which the code itself supplies: a deliberate crash or a hard-coded bad or poison pointer, not a freed or overwritten one"),
    };
    Some(Inference::new(
        "constant_address",
        text,
        format!(
            "access violation parameters: {} at {:#x}{}; {how}; at {}{}",
            fault.verb,
            fault.target,
            fault.gp_note,
            fault.site,
            fault.instr_basis()
        ),
    ))
}

/// The access ran over a page boundary out of accessible memory.
fn overrun(fault: &Fault) -> Option<Inference> {
    let instruction = fault.instruction()?;
    let effective = instruction.effective_address();
    let size = instruction.memory.as_ref().map_or(1, |m| m.size.max(1));
    let o = regions::page_boundary(fault.evidence.session, fault.address, effective, size)?;
    let (what, direction) = if o.forward {
        ("past the end of", "ran forward off the end of")
    } else {
        ("before the start of", "ran backward off the start of")
    };
    let (neighbour, how) = o.neighbour;
    let region = regions::region_at(fault.evidence.session, fault.address)
        .map(|r| format!("; {:#x} lies in {}", fault.address, r.describe()))
        .unwrap_or_default();
    Some(Inference::new(
        "buffer_overrun",
        format!(
            "{} at {:#x}, just {what} accessible memory at a page boundary: the access {direction} a buffer (an overrun of an array, a string or a copy loop; with page heap enabled, of a heap block)",
            fault.verb, fault.address
        ),
        format!(
            "access violation parameters: {} at {:#x}; the neighbouring byte {neighbour:#x} is {how}{region}; at {}{}{}",
            fault.verb,
            fault.target,
            fault.site,
            fault.instr_basis(),
            fault.trace_basis()
        ),
    ))
}

/// The address lies in reserved (uncommitted) memory or a guard page: with the system out of
/// commit, the commit that should have backed it failed.
fn uncommitted(fault: &Fault) -> Option<Inference> {
    let session = fault.evidence.session;
    let region = regions::region_at(session, fault.address)?;
    let commit = session.target().commit_facts();
    let basis = format!(
        "access violation parameters: {} at {:#x}; {:#x} lies in {}{}; at {}{}",
        fault.verb,
        fault.target,
        fault.address,
        region.describe(),
        regions::commit_summary(&commit)
            .map(|c| format!("; {c}"))
            .unwrap_or_default(),
        fault.site,
        fault.instr_basis()
    );
    match region.state {
        RegionState::Reserved => Some(match regions::commit_exhaustion(&commit) {
            Some(exhausted) => Inference::new(
                "out_of_memory",
                format!(
                    "out of memory: {} to {:#x}, reserved memory that was never committed, while {exhausted}: committing the memory failed and the program used it anyway",
                    fault.verb, fault.address
                ),
                basis,
            ),
            None => Inference::new(
                "access_violation",
                format!(
                    "{} of {:#x}, reserved memory that was never committed: the program used memory it had only reserved (a commit that failed or was never made, or a pointer past the committed part of a reservation)",
                    fault.verb, fault.address
                ),
                basis,
            ),
        }),
        RegionState::Guard => Some(Inference::new(
            "access_violation",
            format!(
                "{} of {:#x}, a guard page: the access reached a guard page (a stack's or an allocator's) before its memory was committed",
                fault.verb, fault.address
            ),
            basis,
        )),
        _ => None,
    }
}

/// A pointer made of a fill pattern.
fn fill(fault: &Fault, place: &str, p: &FillPattern) -> Inference {
    let hypothesis = match p.hypothesis {
        "use_after_free" => "a use after free: the pointer was read from memory already freed",
        "uninitialized" => "an uninitialised pointer: read from memory never written",
        _ => "a buffer overflow: data was written over the pointer",
    };
    Inference::new(
        "fill_pattern",
        format!(
            "{} through a pointer made of the fill pattern {} ({}): hypothesis: {hypothesis}",
            fault.verb, p.name, p.meaning
        ),
        format!(
            "{place} holds {}{}; at {}{}{}",
            p.name,
            fault.gp_note,
            fault.site,
            fault.instr_basis(),
            fault.trace_basis()
        ),
    )
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

pub(super) fn instr_basis(instruction: Option<&FaultingInstruction>) -> String {
    instruction
        .map(|i| format!("; faulting instruction {}", i.summary()))
        .unwrap_or_default()
}

/// The inference from the address's class alone, with where the pointer came from.
fn classified(fault: &Fault, class: &AddressClass, access: Option<Access>) -> Inference {
    let verb = fault.verb;
    let (target, address) = (fault.target, fault.address);
    let instr = format!("{}{}", fault.instr_basis(), fault.trace_basis());
    let gp_note = &fault.gp_note;
    let origin = fault.origin_clause();
    let params = format!("access violation parameters: {verb} at {target:#x}");
    let (kind, text, basis) = match (class, access) {
        (AddressClass::Null, _) => (
            "null_deref",
            format!("null pointer dereference: {verb} through a NULL pointer{origin}"),
            format!("{params}, inside the never-mapped first 64 KiB; at {}{instr}", fault.site),
        ),
        (AddressClass::NearNull { offset }, _) => (
            "null_deref",
            format!("null pointer dereference: {verb} at {offset:#x}, inside the never-mapped NULL page: a NULL or near-NULL pointer plus an offset; hypotheses: a field reached through a NULL object pointer, an element of a NULL array, or a small integer used as a pointer{origin}"),
            format!("{params}, inside the never-mapped first 64 KiB; at {}{instr}", fault.site),
        ),
        (_, Some(Access::Execute)) => (
            "access_violation",
            format!("execution of non-executable memory (DEP) at {}: hypotheses: a corrupted function pointer or return address, or code that jumped into data", class.describe()),
            format!("access violation parameter 0 = 8 (execute) at {target:#x}{instr}"),
        ),
        (AddressClass::NonCanonical, _) => (
            "access_violation",
            format!("{verb} of the non-canonical address {address:#x}: no valid pointer has this value; hypotheses: a corrupted or uninitialised pointer{origin}"),
            format!("{address:#x} is outside the canonical x64 address space{gp_note}{instr}"),
        ),
        (AddressClass::Ascii { text }, _) => (
            "fill_pattern",
            format!("{verb} through {address:#x}, a pointer whose bytes are all printable characters (\"{text}\"): hypothesis: text overwrote a pointer (a buffer overflow); alternatives: an uninitialised pointer or a deliberate test value{origin}"),
            format!("every byte of {target:#x} is a printable character{instr}"),
        ),
        (AddressClass::Stack { .. }, _) => (
            "access_violation",
            format!("invalid {verb} of {}: hypotheses: a stack guard page, or a pointer to a dead stack frame{origin}", class.describe()),
            format!("{target:#x} lies in a thread's stack range{instr}"),
        ),
        (AddressClass::Image { .. }, Some(Access::Write)) => (
            "access_violation",
            format!("write into {}: a write to read-only data or code{origin}", class.describe()),
            format!("{target:#x} lies inside a loaded module{instr}"),
        ),
        (AddressClass::Image { .. }, _) => (
            "access_violation",
            format!("invalid {verb} inside {}{origin}", class.describe()),
            format!("{target:#x} lies inside a loaded module{instr}"),
        ),
        (AddressClass::Kernel, _) => (
            "access_violation",
            format!("{verb} of kernel address space ({address:#x}) from user mode: hypotheses: a corrupted or uninitialised pointer{origin}"),
            format!("{target:#x} is in the kernel half of the address space{instr}"),
        ),
        (AddressClass::Unknown, _) => (
            "access_violation",
            format!("invalid {verb} of {address:#x}, memory nothing in the dump maps: hypotheses: a dangling (freed) pointer, a corrupted pointer, or an index out of range{origin}"),
            format!("the address is not NULL-relative and no module or thread stack in the dump contains it{instr}"),
        ),
    };
    Inference::new(kind, text, basis)
}
