//! Symbols: `ln ADDR` (nearest symbol), `x MOD!PATTERN` (search).

use super::eval;
use crate::error::{excerpt, CommandError};
use crate::output::{CommandOutput, TypedResult};
use crate::render::addr;
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::{module_name, Session, Symbolized};
use ntdbg_symbols::wildcard_match;

/// Longest `x` pattern (matching cost grows with pattern length × symbol count).
const MAX_PATTERN_LEN: usize = 512;

/// Most symbols `x` lists.
const MAX_MATCHES: usize = 5000;

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["ln"],
        "ln ADDR",
        "the symbol nearest to ADDR, with its source line",
        "",
        ln,
    ),
    CommandSpec::inspect(
        &["x"],
        "x MOD!PATTERN",
        "search symbols: * and ? wildcards in both the module and the symbol name",
        "Lists functions and public symbols with their addresses (at most 5000).",
        x,
    ),
];

fn ln(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let arg = inv.args.trim();
    if arg.is_empty() {
        return Err(CommandError::syntax("ln needs an address").with_hint("e.g. `ln @rip`"));
    }
    let a = eval(session, arg)?;
    let sym = session.symbolize(a);
    if sym.function.is_none() {
        let text = match &sym.module {
            Some(_) => format!("({})   {}\n", addr(session, a), sym.display()),
            None => format!("No symbol found at {}\n", addr(session, a)),
        };
        return Ok(CommandOutput::with(
            text,
            TypedResult::Symbols { symbols: vec![sym] },
        ));
    }
    let start = a.wrapping_sub(sym.function_offset.unwrap_or(0));
    let mut text = format!(
        "({})   {}{}\n",
        addr(session, start),
        sym.display(),
        sym.source_suffix()
    );
    if sym.function_offset == Some(0) {
        text.push_str(&format!("Exact matches:\n    {}\n", sym.display()));
    }
    Ok(CommandOutput::with(
        text,
        TypedResult::Symbols { symbols: vec![sym] },
    ))
}

fn x(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let arg = inv.args.split_whitespace().last().unwrap_or("");
    if arg.len() > MAX_PATTERN_LEN {
        return Err(CommandError::syntax(format!(
            "Syntax error in 'x': the pattern is {} bytes long (at most {MAX_PATTERN_LEN})",
            arg.len()
        )));
    }
    let Some((module_pat, sym_pat)) = arg.split_once('!') else {
        return Err(
            CommandError::syntax(format!("Syntax error in 'x {}'", excerpt(arg)))
                .with_hint("write `x MODULE!PATTERN`, e.g. `x crashy!crash_*`"),
        );
    };
    let mut found = Vec::new();
    let mut text = String::new();
    let modules: Vec<_> = session
        .target()
        .modules()
        .by_addr()
        .filter(|m| wildcard_match(module_pat, &module_name(&m.name)))
        .cloned()
        .collect();
    if modules.is_empty() {
        return Err(CommandError::new(
            "no_such_module",
            format!("No module matches '{}'", excerpt(module_pat)),
        ));
    }
    'outer: for m in &modules {
        let base = m.raw.base_of_image;
        let name = module_name(&m.name);
        for entry in session.module_symbols(m).find(sym_pat) {
            if found.len() >= MAX_MATCHES {
                text.push_str(&format!("(stopped after {MAX_MATCHES} matches)\n"));
                break 'outer;
            }
            let a = base + entry.rva;
            text.push_str(&format!("{} {name}!{}\n", addr(session, a), entry.name));
            found.push(Symbolized {
                address: a,
                module: Some(name.clone()),
                module_base: Some(base),
                function: Some(entry.name),
                function_offset: Some(0),
                ..Default::default()
            });
        }
    }
    Ok(CommandOutput::with(
        text,
        TypedResult::Symbols { symbols: found },
    ))
}
