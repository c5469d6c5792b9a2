//! Where a register's value came from: a short backward data flow over the instructions of the
//! function before a point (a few dozen, registers and stack slots, across no call). The answer
//! is one of a few origins any dump of x86/x64 code can show — an immediate of the code, a
//! global variable, an argument of the function, a load through another pointer, pointer
//! arithmetic with an index, the return value of a call — with every instruction followed.

use super::code::{function_at, Certainty, CodeBefore};
use ntdbg_engine::disasm::{ControlFlow, MemoryOperand, Operand};
use ntdbg_engine::Session;

/// Most copies followed (`mov rax,rcx` then `mov rcx,[rbp-8]` …).
const MAX_DEPTH: usize = 6;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// An immediate of the code (`mov eax,41414141h`, `xor eax,eax`).
    Constant(u64),
    /// Loaded from a global variable at this address (named when the symbols know it).
    Global {
        /// The variable's address.
        address: u64,
        /// `app!g_config`, when named.
        name: Option<String>,
    },
    /// The function's argument (1-based), as it arrived.
    Argument(usize),
    /// Loaded from memory through another pointer (`[rbx+10h]`).
    Loaded {
        /// The operand, as the instruction writes it.
        operand: String,
        /// The pointer register and its value, when the context still holds it unchanged.
        base: Option<(String, u64)>,
    },
    /// The address of a global or function of a module (`lea rax,[rip+X]`).
    AddressOf(u64),
    /// Computed by arithmetic (`lea rax,[rcx+rdx*4]`, `add rax,rsi`); `index` names the
    /// register scaled or added as an index.
    Computed {
        /// The instruction.
        text: String,
        /// The index register, when one is used.
        index: Option<String>,
    },
    /// The return value of a call (`rax` right after `call`).
    Returned {
        /// The callee, when named.
        callee: Option<String>,
    },
}

impl Origin {
    /// The origin in a few words: `the constant 0x41414141`, `the function's 1st argument`.
    pub fn describe(&self) -> String {
        match self {
            Origin::Constant(v) => format!("the constant {v:#x} in the code"),
            Origin::Global {
                name: Some(n),
                address,
            } => format!("the global variable {n} ({address:#x})"),
            Origin::Global { address, .. } => format!("a global variable at {address:#x}"),
            Origin::Argument(n) => format!("the function's {} argument", ordinal(*n)),
            Origin::AddressOf(a) => format!("the address {a:#x} of a global or function"),
            Origin::Loaded {
                operand,
                base: Some((r, v)),
            } => format!("a pointer loaded from memory at {operand} ({r} = {v:#x})"),
            Origin::Loaded { operand, .. } => format!("a pointer loaded from memory at {operand}"),
            Origin::Computed {
                text,
                index: Some(i),
            } => format!("pointer arithmetic with the index {i} (`{text}`)"),
            Origin::Computed { text, .. } => format!("pointer arithmetic (`{text}`)"),
            Origin::Returned { callee: Some(c) } => format!("the return value of {c}"),
            Origin::Returned { callee: None } => "the return value of a call".into(),
        }
    }
}

/// A traced register: its origin and the instructions followed, last first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Trace {
    /// The register traced.
    pub register: String,
    /// Where its value came from.
    pub origin: Origin,
    /// `mov eax,41414141h` at 0x1a6c8, … in the order followed (nearest the use first).
    pub steps: Vec<String>,
    /// The weakest certainty of the steps.
    pub certainty: Certainty,
    /// How the instructions were found.
    pub how: &'static str,
}

impl Trace {
    /// The trace as a basis clause: `edi <- mov edi,41414141h at 0x111a6c8 (decoded …)`.
    pub fn basis(&self) -> String {
        let caveat = match self.certainty {
            Certainty::Certain => "",
            Certainty::Window => "; a jump from outside the decoded window could enter between",
        };
        if self.steps.is_empty() {
            return format!(
                "{} is not written in the function before the use ({}{caveat})",
                self.register, self.how
            );
        }
        format!(
            "{} <- {} ({}{caveat})",
            self.register,
            self.steps.join(" <- "),
            self.how
        )
    }
}

/// The registers an argument arrives in on x64 Windows, in order.
const X64_ARGUMENT_REGISTERS: [&str; 4] = ["rcx", "rdx", "r8", "r9"];

/// Traces `register` back from the end of `code` (the point of use). `context` gives the
/// register values at the point of use (for a load's base register that nothing in between
/// changes). `None` when nothing the window shows explains the value.
pub(crate) fn trace(
    session: &Session,
    code: &CodeBefore,
    register: &str,
    context: &dyn Fn(&str) -> Option<u64>,
) -> Option<Trace> {
    let mut steps = Vec::new();
    let mut certainty = Certainty::Certain;
    let origin = follow(
        session,
        code,
        register,
        code.instructions.len(),
        0,
        &mut steps,
        &mut certainty,
        context,
    )?;
    Some(Trace {
        register: register.to_string(),
        origin,
        steps,
        certainty,
        how: code.how,
    })
}

#[allow(clippy::too_many_arguments)]
fn follow(
    session: &Session,
    code: &CodeBefore,
    register: &str,
    end: usize,
    depth: usize,
    steps: &mut Vec<String>,
    certainty: &mut Certainty,
    context: &dyn Fn(&str) -> Option<u64>,
) -> Option<Origin> {
    if depth > MAX_DEPTH {
        return None;
    }
    let Some((index, how_sure)) = code.writer_before(register, end) else {
        // Written on a path that is not straight (a loop, a jump in between): unknown.
        if code.written_before(register, end) {
            return None;
        }
        return unwritten(session, code, register, end);
    };
    if how_sure == Certainty::Window {
        *certainty = Certainty::Window;
    }
    let writer = &code.instructions[index];
    steps.push(format!("`{}` at {:#x}", writer.text, writer.address));
    if let Some((r, value)) = &writer.constant {
        return (r == register).then_some(Origin::Constant(*value));
    }
    if let ControlFlow::Call { target } = writer.flow {
        // Only the return value survives a call; other volatile registers are clobbered.
        if !matches!(register, "rax" | "eax") {
            return None;
        }
        let callee = target.and_then(|t| function_at(session, t));
        return Some(Origin::Returned { callee });
    }
    let destination_is_register =
        matches!(writer.operands.first(), Some(Operand::Register(r)) if r == register);
    if !destination_is_register {
        return None;
    }
    match (writer.mnemonic.as_str(), writer.operands.get(1)) {
        ("mov" | "movzx" | "movsx" | "movsxd", Some(Operand::Register(source))) => follow(
            session,
            code,
            source,
            index,
            depth + 1,
            steps,
            certainty,
            context,
        ),
        ("mov" | "movzx" | "movsx" | "movsxd", Some(Operand::Memory(m))) => {
            load(session, code, m, index, depth, steps, certainty, context)
        }
        ("lea", Some(Operand::Memory(m))) if m.base.is_none() && m.index.is_none() => {
            Some(Origin::AddressOf(m.displacement as u64))
        }
        ("lea", Some(Operand::Memory(m))) => Some(Origin::Computed {
            text: writer.text.clone(),
            index: m.index.clone(),
        }),
        (
            "add" | "sub" | "imul" | "shl" | "sal" | "or" | "and" | "adc" | "sbb" | "inc" | "dec",
            _,
        ) => {
            let index = writer.operands.get(1).and_then(|o| match o {
                Operand::Register(r) if r != register => Some(r.clone()),
                _ => None,
            });
            Some(Origin::Computed {
                text: writer.text.clone(),
                index,
            })
        }
        _ => None,
    }
}

/// A load `mov reg,[m]`: a global, a stack slot stored earlier in the window (followed), an
/// x86 argument (`[ebp+8]`), or a load through another pointer.
#[allow(clippy::too_many_arguments)]
fn load(
    session: &Session,
    code: &CodeBefore,
    m: &MemoryOperand,
    index: usize,
    depth: usize,
    steps: &mut Vec<String>,
    certainty: &mut Certainty,
    context: &dyn Fn(&str) -> Option<u64>,
) -> Option<Origin> {
    if m.segment.is_some() {
        return None;
    }
    let operand = operand_text(m);
    match (m.base.as_deref(), &m.index) {
        (None, None) => {
            let address = m.displacement as u64;
            let s = session.symbolize(address);
            let name = s.function.as_ref().map(|_| s.display());
            Some(Origin::Global { address, name })
        }
        (Some(base), None) if is_frame_register(base) => {
            let pointer = session.arch().pointer_size();
            let offsets = code.frame_offsets(pointer);
            let slot = entry_slot(&offsets, index, base, m.displacement);
            if let Some(stored) = last_store(code, &offsets, m, slot, index) {
                let store = &code.instructions[stored];
                steps.push(format!("`{}` at {:#x}", store.text, store.address));
                let s = store.store.as_ref()?;
                if let Some(v) = s.immediate {
                    return Some(Origin::Constant(v));
                }
                let source = s.register.clone()?;
                return follow(
                    session,
                    code,
                    &source,
                    stored,
                    depth + 1,
                    steps,
                    certainty,
                    context,
                );
            }
            let ptr = pointer as i64;
            match slot {
                // Above the return address: the caller's arguments (on x64 past the four
                // home slots, which hold an argument only once the callee stores it there).
                Some(off) if off >= ptr && (ptr == 4 || off >= 5 * ptr) => {
                    Some(Origin::Argument(((off - ptr) / ptr + 1) as usize))
                }
                Some(_) => None,
                // `[ebp+8]`, `[ebp+0Ch]`, … of a frame-pointer function: its arguments.
                None => {
                    (ptr == 4 && base == "ebp" && m.displacement >= 8 && m.displacement % 4 == 0)
                        .then(|| Origin::Argument((m.displacement as usize - 8) / 4 + 1))
                }
            }
        }
        (Some(base), _) => {
            // The base's value at the load is the context's when nothing after the load
            // changes it.
            let unchanged = code
                .writer_before(base, code.instructions.len())
                .is_none_or(|(w, _)| w < index);
            let value = unchanged.then(|| context(base)).flatten();
            Some(Origin::Loaded {
                operand,
                base: value.map(|v| (base.to_string(), v)),
            })
        }
        (None, Some(_)) => Some(Origin::Loaded {
            operand,
            base: None,
        }),
    }
}

/// A register nothing in the window writes: an x64 argument register when the window starts
/// at the function's entry and no jump lands in it (a loop could come back from code after
/// the use that writes the register).
fn unwritten(session: &Session, code: &CodeBefore, register: &str, end: usize) -> Option<Origin> {
    let x64 = session.arch().pointer_size() == 8;
    let no_call_before = code.instructions[..end]
        .iter()
        .all(|i| !matches!(i.flow, ControlFlow::Call { .. }));
    let no_jump_in = match &code.jump_targets {
        Some(targets) => code.instructions[..end]
            .iter()
            .skip(1)
            .all(|i| !targets.contains(&i.address)),
        None => false,
    };
    if !(x64 && code.from_entry && no_call_before && no_jump_in) {
        return None;
    }
    X64_ARGUMENT_REGISTERS
        .iter()
        .position(|r| *r == register)
        .map(|n| Origin::Argument(n + 1))
}

/// The stack slot `[base+displacement]` at `instructions[index]` as an offset from the stack
/// pointer at the function's entry, when the frame offsets know `base` there.
fn entry_slot(
    offsets: &[(Option<i64>, Option<i64>)],
    index: usize,
    base: &str,
    displacement: i64,
) -> Option<i64> {
    let (sp, fp) = offsets.get(index)?;
    let at = if matches!(base, "rsp" | "esp") {
        sp
    } else {
        fp
    };
    at.map(|b| b + displacement)
}

/// The last store to the stack slot `m` (the same entry offset `slot` when known, else the
/// same operand) before `instructions[end]`, in straight-line code.
fn last_store(
    code: &CodeBefore,
    offsets: &[(Option<i64>, Option<i64>)],
    m: &MemoryOperand,
    slot: Option<i64>,
    end: usize,
) -> Option<usize> {
    let index = code.instructions[..end]
        .iter()
        .enumerate()
        .rposition(|(k, i)| {
            i.store.as_ref().is_some_and(|s| {
                let o = &s.operand;
                if o.index.is_some() {
                    return false;
                }
                match (slot, o.base.as_deref()) {
                    (Some(slot), Some(b)) if is_frame_register(b) => {
                        entry_slot(offsets, k, b, o.displacement) == Some(slot)
                    }
                    (Some(_), _) => false,
                    (None, _) => o.base == m.base && o.displacement == m.displacement,
                }
            })
        })?;
    // A callee cannot change the caller's own stack slots (their address does not escape in
    // the code that spills registers to them), so calls between do not matter.
    let straight = code.instructions[index + 1..end].iter().all(|i| {
        matches!(
            i.flow,
            ControlFlow::Next
                | ControlFlow::Call { .. }
                | ControlFlow::Jump {
                    conditional: true,
                    ..
                }
        )
    });
    straight.then_some(index)
}

fn is_frame_register(r: &str) -> bool {
    matches!(r, "rsp" | "rbp" | "esp" | "ebp")
}

/// `[rbx+10h]`-style text of a memory operand.
pub(crate) fn operand_text(m: &MemoryOperand) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(b) = &m.base {
        parts.push(b.clone());
    }
    if let Some(i) = &m.index {
        parts.push(if m.scale > 1 {
            format!("{i}*{}", m.scale)
        } else {
            i.clone()
        });
    }
    let mut text = parts.join("+");
    match (m.displacement, text.is_empty()) {
        (d, true) => text = format!("{:#x}", d as u64),
        (0, false) => {}
        (d, false) if d < 0 => text.push_str(&format!("-{:#x}", d.unsigned_abs())),
        (d, false) => text.push_str(&format!("+{d:#x}")),
    }
    format!("[{text}]")
}

fn ordinal(n: usize) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        4 => "fourth".into(),
        n => format!("argument #{n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operand_texts() {
        let m = |base: Option<&str>, index: Option<&str>, scale, displacement| MemoryOperand {
            base: base.map(String::from),
            index: index.map(String::from),
            scale,
            displacement,
            segment: None,
            size: 8,
        };
        assert_eq!(operand_text(&m(Some("rbx"), None, 1, 0x10)), "[rbx+0x10]");
        assert_eq!(operand_text(&m(Some("rbp"), None, 1, -8)), "[rbp-0x8]");
        assert_eq!(
            operand_text(&m(Some("rax"), Some("rcx"), 4, 0)),
            "[rax+rcx*4]"
        );
        assert_eq!(operand_text(&m(None, None, 1, 0x4000)), "[0x4000]");
        assert_eq!(ordinal(2), "second");
    }
}
