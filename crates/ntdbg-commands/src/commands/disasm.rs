//! Disassembly: `u`, `ub`, `uf` (x86 and x64 in WinDbg's MASM shape, ARM64 in Microsoft's ARM64
//! syntax).

use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::render::code::{isa, SessionCode};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::disasm::{self, Instruction};
use ntdbg_engine::expr::{parse_range, Extent};
use ntdbg_engine::Session;

/// Instructions `u` and `ub` show by default.
const DEFAULT_COUNT: u64 = 8;
/// Most instructions one `u` may show.
const MAX_COUNT: u64 = 10_000;

const U_DETAILS: &str = "ADDR defaults to the current instruction (or where the last `u` ended). \
`L COUNT` sets the number of instructions. Code bytes missing from the dump print as `??`. \
On ARM64 each line shows the instruction word and Microsoft's ARM64 syntax (`stp fp,lr,[sp,#-0x20]!`, \
`bl module!symbol (address)`); `ub` lists the words before ADDR.";

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["u"],
        "u [ADDR] [L COUNT]",
        "disassemble forward",
        U_DETAILS,
        u,
    ),
    CommandSpec::inspect(
        &["ub"],
        "ub [ADDR] [L COUNT]",
        "disassemble the instructions before ADDR",
        U_DETAILS,
        ub,
    ),
    CommandSpec::inspect(
        &["uf"],
        "uf ADDR",
        "disassemble the whole function containing ADDR",
        U_DETAILS,
        uf,
    ),
];

/// Which way `u`, `ub` and `uf` disassemble.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// `u`: forward from the address (and the next `u` continues).
    Forward,
    /// `ub`: the instructions before the address.
    Backward,
    /// `uf`: the whole function holding the address.
    Function,
}

impl Direction {
    /// The command word.
    fn word(self) -> &'static str {
        match self {
            Direction::Forward => "u",
            Direction::Backward => "ub",
            Direction::Function => "uf",
        }
    }
}

fn u(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    disassemble(session, inv.args, Direction::Forward)
}

fn ub(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    disassemble(session, inv.args, Direction::Backward)
}

fn uf(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    disassemble(session, inv.args, Direction::Function)
}

fn disassemble(
    session: &mut Session,
    args: &str,
    direction: Direction,
) -> Result<CommandOutput, CommandError> {
    let code_isa = isa(session)?;
    let range = parse_range(args, session)?;
    let start = match range.start.or_else(|| session.disasm_cursor()) {
        Some(a) => a,
        None => session.instruction_pointer().ok_or_else(|| {
            CommandError::syntax(format!(
                "{}: no address given and no current instruction",
                direction.word()
            ))
        })?,
    };
    let code = SessionCode(session);
    let lines: Vec<Instruction> = if direction == Direction::Function {
        disasm::disassemble_function(code_isa, &code, &code, start).map_err(|e| {
            CommandError::new(ErrorCode::NoFunctionBounds, e.to_string())
                .with_hint("use `u ADDR L COUNT`")
        })?
    } else {
        let count = match range.extent {
            None => DEFAULT_COUNT,
            Some(Extent::Count(n)) => n,
            Some(Extent::End(end)) => end.saturating_sub(start).max(1),
        };
        if count > MAX_COUNT {
            return Err(CommandError::new(
                ErrorCode::RangeTooLarge,
                format!("Range error: {count} instructions (at most {MAX_COUNT})"),
            ));
        }
        let count = count as usize;
        if direction == Direction::Backward {
            disasm::disassemble_backward(code_isa, &code, &code, start, count)
        } else {
            disasm::disassemble_forward(code_isa, &code, &code, start, count)
        }
    };
    let text = disasm::render(&lines);
    if direction == Direction::Forward {
        let next = lines
            .last()
            .map(|l| l.address + (l.bytes.len() as u64 / 2).max(1));
        if let Some(n) = next {
            session.set_disasm_cursor(n);
        }
    }
    Ok(CommandOutput::with(
        text,
        TypedResult::Disassembly {
            instructions: lines,
        },
    ))
}
