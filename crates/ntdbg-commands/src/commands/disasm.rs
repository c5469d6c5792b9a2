//! Disassembly: `u`, `ub`, `uf` (x86 and x64 in WinDbg's MASM shape, ARM64 in Microsoft's ARM64
//! syntax).

use crate::error::CommandError;
use crate::output::{CommandOutput, TypedResult};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::disasm::{self, AddressNamer, CodeMemory, Instruction, Isa};
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
        u,
    ),
    CommandSpec::inspect(
        &["uf"],
        "uf ADDR",
        "disassemble the whole function containing ADDR",
        U_DETAILS,
        u,
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

fn isa(session: &Session) -> Result<Isa, CommandError> {
    let arch = session.arch();
    Isa::of_arch(arch).ok_or_else(|| {
        CommandError::new(
            "unsupported_arch",
            format!("Disassembly of {} code is not supported yet", arch.name()),
        )
    })
}

fn u(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let code_isa = isa(session)?;
    let kind = inv.name.to_ascii_lowercase();
    let range = parse_range(inv.args, session)?;
    let start = match range.start.or_else(|| session.disasm_cursor()) {
        Some(a) => a,
        None => session.instruction_pointer().ok_or_else(|| {
            CommandError::syntax(format!(
                "{kind}: no address given and no current instruction"
            ))
        })?,
    };
    let code = SessionCode(session);
    let lines: Vec<Instruction> = if kind == "uf" {
        disasm::disassemble_function(code_isa, &code, &code, start).map_err(|e| {
            CommandError::new("no_function_bounds", e.to_string()).with_hint("use `u ADDR L COUNT`")
        })?
    } else {
        let count = match range.extent {
            None => DEFAULT_COUNT,
            Some(Extent::Count(n)) => n,
            Some(Extent::End(end)) => end.saturating_sub(start).max(1),
        };
        if count > MAX_COUNT {
            return Err(CommandError::new(
                "range_too_large",
                format!("Range error: {count} instructions (at most {MAX_COUNT})"),
            ));
        }
        let count = count as usize;
        if kind == "ub" {
            disasm::disassemble_backward(code_isa, &code, &code, start, count)
        } else {
            disasm::disassemble_forward(code_isa, &code, &code, start, count)
        }
    };
    let text = disasm::render(&lines);
    if kind == "u" {
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
    let Ok(code_isa) = isa(session) else {
        return format!("{}\n", session.symbolize(ip).display());
    };
    let code = SessionCode(session);
    let lines = disasm::disassemble_forward(code_isa, &code, &code, ip, 1);
    let mut text = disasm::render(&lines);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}
