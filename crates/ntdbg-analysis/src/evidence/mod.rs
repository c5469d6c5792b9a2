//! Evidence any dump of its kind carries, gathered once per analysis for the inferences: the
//! code before a point ([`code`]) and where a register's value came from ([`dataflow`]), the
//! address-space facts about an address ([`regions`]), what each frame called ([`calls`],
//! through the import tables of [`imports`]), and what the faulting registers and stack slots
//! point to ([`pointed`]).

pub(crate) mod calls;
pub(crate) mod code;
pub(crate) mod dataflow;
pub(crate) mod imports;
pub(crate) mod pointed;
pub(crate) mod regions;

use crate::fault::{faulting_instruction, FaultingInstruction};
use calls::Call;
use dataflow::{Origin, Trace};
use imports::ImportNames;
use ntdbg_engine::disasm::{instruction_effects, Bitness, InstructionEffects};
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// Instructions of the faulting function looked at before the fault.
const LOOK_BACK: usize = 40;

/// The evidence about one exception.
#[derive(Debug)]
pub(crate) struct Evidence<'a> {
    /// The session.
    pub session: &'a Session,
    /// The exception.
    pub event: &'a ExceptionEvent,
    /// The faulting instruction with its register values, when its bytes are available.
    pub instruction: Option<FaultingInstruction>,
    /// Its effects (the store it makes, its operands), decoded from the same bytes.
    pub effects: Option<InstructionEffects>,
    /// What each frame called: `(caller frame index, call)`, innermost first.
    pub calls: Vec<(usize, Call)>,
    /// Import tables read so far.
    pub imports: ImportNames,
}

impl<'a> Evidence<'a> {
    /// Gathers what the exception and its stack show.
    pub fn gather(
        session: &'a Session,
        event: &'a ExceptionEvent,
        frames: &[Frame],
    ) -> Evidence<'a> {
        let imports = ImportNames::default();
        let calls = calls::call_chain(session, &imports, frames);
        let effects = Bitness::of_arch(session.arch()).and_then(|b| {
            let bytes = session.read_code(event.address, 16)?;
            instruction_effects(b, &bytes, event.address)
        });
        Evidence {
            session,
            event,
            instruction: faulting_instruction(session, event),
            effects,
            calls,
            imports,
        }
    }

    /// Where the registers of the faulting instruction's memory operand came from: base first,
    /// then index (only those the data flow explains).
    pub fn operand_traces(&self) -> Vec<Trace> {
        let Some(memory) = self.instruction.as_ref().and_then(|i| i.memory.as_ref()) else {
            return Vec::new();
        };
        let Some(code) = code::code_before(self.session, self.event.address, LOOK_BACK) else {
            return Vec::new();
        };
        let context = |r: &str| -> Option<u64> {
            ntdbg_engine::registers::register(self.event.context.as_ref()?, r)
        };
        self.faulting_registers(memory)
            .iter()
            .filter_map(|r| dataflow::trace(self.session, &code, r, &context))
            .collect()
    }

    /// The registers that make the faulting address: the operand's base and index; for a
    /// string instruction (`rep movs`), whichever of its source and destination pointers lies
    /// within 64 KiB below the address the record gives.
    fn faulting_registers(&self, memory: &ntdbg_engine::disasm::MemoryOperand) -> Vec<String> {
        let instruction = self.instruction.as_ref();
        let string = self.effects.as_ref().is_some_and(|e| {
            ["movs", "cmps", "stos", "lods", "scas"]
                .iter()
                .any(|m| e.mnemonic.starts_with(m))
        });
        let address = self.event.parameters.get(1).copied();
        if let (true, Some(i), Some(address)) = (string, instruction, address) {
            let near: Vec<String> = i
                .registers
                .iter()
                .filter(|(r, _)| r.ends_with("si") || r.ends_with("di"))
                .filter(|(_, v)| address.wrapping_sub(*v) < crate::fault::NULL_REGION)
                .map(|(r, _)| r.clone())
                .collect();
            if !near.is_empty() {
                return near;
            }
        }
        memory
            .base
            .iter()
            .chain(memory.index.iter())
            .cloned()
            .collect()
    }

    /// The constant of the code the faulting address is made of: a register of the operand
    /// loaded with an immediate, the rest of the address (other registers, displacement) a
    /// small offset; or an absolute operand outside every module. `(the constant, the basis)`.
    pub fn constant_address(&self, address: u64) -> Option<(u64, String)> {
        let instruction = self.instruction.as_ref()?;
        let memory = instruction.memory.as_ref()?;
        if memory.segment.is_some() {
            return None;
        }
        if memory.base.is_none() && memory.index.is_none() {
            let absolute = memory.displacement as u64;
            return (self.session.module_at(absolute).is_none()).then(|| {
                (
                    absolute,
                    format!(
                        "the faulting instruction `{}` encodes the address itself (no base or index register)",
                        instruction.text
                    ),
                )
            });
        }
        self.operand_traces().into_iter().find_map(|t| {
            let Origin::Constant(value) = t.origin else {
                return None;
            };
            if t.certainty != code::Certainty::Certain {
                return None;
            }
            let scaled = match memory.index.as_deref() {
                Some(i) if i == t.register => value.wrapping_mul(u64::from(memory.scale)),
                _ => value,
            };
            let rest = address.wrapping_sub(scaled);
            // The rest must be small either way round (an index of 0 or 1, a field offset).
            let small =
                rest < crate::fault::NULL_REGION || rest.wrapping_neg() < crate::fault::NULL_REGION;
            // The register the context holds must still be the constant.
            let held = instruction.value_of(&t.register).is_none_or(|v| v == value);
            (small && held).then(|| (value, t.basis()))
        })
    }

    /// Whether the faulting instruction writes memory (decoded from the instruction, not the
    /// exception record, which says read for every general-protection fault).
    pub fn instruction_writes(&self) -> Option<bool> {
        self.effects.as_ref().map(|e| e.store.is_some())
    }

    /// The first call of the chain whose callee's bare name satisfies `wanted`, with the
    /// caller's frame index.
    pub fn called(&self, wanted: &dyn Fn(&str) -> bool) -> Option<&(usize, Call)> {
        self.calls
            .iter()
            .find(|(_, c)| c.function().is_some_and(wanted))
    }
}
