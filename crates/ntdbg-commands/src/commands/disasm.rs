//! Disassembly: `u`, `ub`, `uf` (x86 and x64, iced-x86 in WinDbg's MASM shape).

use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::disasm::{self, AddressNamer, Bitness, CodeMemory, Instruction};
use ntdbg_engine::expr::{parse_range, Extent};
use ntdbg_engine::Session;

/// Instructions `u` and `ub` show by default.
const DEFAULT_COUNT: u64 = 8;
/// Most instructions one `u` may show.
const MAX_COUNT: u64 = 10_000;

const U_DETAILS: &str = "ADDR defaults to the current instruction (or where the last `u` ended). \
`L COUNT` sets the number of instructions. Code bytes missing from the dump print as `??`. \
ARM64 disassembly is not supported yet.";

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

/// The session's memory and symbols, as the disassembler reads them.
pub(crate) struct SessionCode<'a>(pub(crate) &'a Session);

impl CodeMemory for SessionCode<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        match self.0.read_code(addr, buf.len()) {
            Some(chunk) => {
                buf[..chunk.len()].copy_from_slice(&chunk);
                chunk.len()
            }
            None => 0,
        }
    }
}

impl AddressNamer for SessionCode<'_> {
    fn name(&self, addr: u64) -> Option<String> {
        let s = self.0.symbolize(addr);
        s.module.as_ref()?;
        Some(s.display())
    }
    fn function_range(&self, addr: u64) -> Option<(u64, u64)> {
        let module = self.0.module_at(addr)?;
        let base = module.raw.base_of_image;
        let (start, size) = self.0.module_symbols(module).function_range(addr - base)?;
        Some((base + start, base + start + size))
    }
}

fn bitness(session: &Session) -> Result<Bitness, CommandError> {
    let arch = session.arch();
    Bitness::of_arch(arch).ok_or_else(|| {
        CommandError::new(
            ErrorCode::UnsupportedArch,
            format!("Disassembly of {} code is not supported yet", arch.name()),
        )
    })
}

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
    let bits = bitness(session)?;
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
        disasm::disassemble_function(bits, &code, &code, start).map_err(|e| {
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
            disasm::disassemble_backward(bits, &code, &code, start, count)
        } else {
            disasm::disassemble_forward(bits, &code, &code, start, count)
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

/// The symbol line and the instruction at `ip`, as `r` shows them under the registers.
pub(crate) fn current_instruction(session: &Session, ip: u64) -> String {
    let Ok(bits) = bitness(session) else {
        return format!("{}\n", session.symbolize(ip).display());
    };
    let code = SessionCode(session);
    let lines = disasm::disassemble_forward(bits, &code, &code, ip, 1);
    let mut text = disasm::render(&lines);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}
