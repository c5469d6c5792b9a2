//! Symbols: `ln ADDR` (nearest symbol), `x [/t] MOD!PATTERN` (search, with prototypes and
//! variable values from the PDB).

use super::util::eval;
use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::render::{addr, dt};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::{module_name, Session, Symbolized};
use ntdbg_symbols::{strip_parameters, wildcard_match, SymbolEntry, SymbolType, TypeDb};

/// Longest `x` pattern (matching cost grows with pattern length × symbol count).
const MAX_PATTERN_LEN: usize = 512;

/// Most symbols `x` lists.
const MAX_MATCHES: usize = 5000;

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["ln"],
        "ln ADDR",
        "the symbol nearest to ADDR, with its source line",
        "An address in a module the process unloaded before the dump was written shows as \
         `<Unloaded_NAME>+0xOFFSET`, as in WinDbg.",
        ln,
    ),
    CommandSpec::inspect(
        &["x"],
        "x [/t] MOD!PATTERN",
        "search symbols: * and ? wildcards in both the module and the symbol name",
        "Lists functions, variables and public symbols with their addresses (at most 5000), \
         as WinDbg: functions with their parameter list (`crashy!write_null (void)`), variables \
         with their value (`crashy!g_counter = 0n5`). /t adds each one's type (the return type \
         for functions, `<NoType>` where the PDB records none).",
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
        let unloaded = session
            .target()
            .unloaded_modules()
            .iter()
            .find(|m| (m.base..m.end()).contains(&a));
        let text = match (&sym.module, unloaded) {
            (Some(_), _) => format!("({})   {}\n", addr(session, a), sym.display()),
            (None, Some(m)) => format!(
                "({})   <Unloaded_{}>+{:#x}\n",
                addr(session, m.base),
                m.name,
                a - m.base
            ),
            (None, None) => format!("No symbol found at {}\n", addr(session, a)),
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
    let mut with_types = false;
    let mut arg = "";
    for word in inv.args.split_whitespace() {
        match word {
            "/t" | "/T" => with_types = true,
            w if w.starts_with('/') => {
                return Err(
                    CommandError::syntax(format!("x: unsupported option '{}'", excerpt(w)))
                        .with_hint("x [/t] MODULE!PATTERN"),
                )
            }
            w => arg = w,
        }
    }
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
            ErrorCode::NoSuchModule,
            format!("No module matches '{}'", excerpt(module_pat)),
        ));
    }
    session.preload_symbols(&modules.iter().collect::<Vec<_>>());
    'outer: for m in &modules {
        let base = m.raw.base_of_image;
        let name = module_name(&m.name);
        let symbols = session.module_symbols(m);
        let types = symbols.types().ok();
        for entry in symbols.find(sym_pat) {
            if found.len() >= MAX_MATCHES {
                text.push_str(&format!("(stopped after {MAX_MATCHES} matches)\n"));
                break 'outer;
            }
            let a = base + entry.rva;
            let line = x_line(session, types.as_deref(), &name, &entry, a, with_types);
            text.push_str(&format!("{} {line}\n", addr(session, a)));
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

/// One `x` line after the address: `[TYPE ]MOD!name (PARAMS)` for a function,
/// `[TYPE ]MOD!name = VALUE` for a variable with a type, else `MOD!name`.
fn x_line(
    session: &Session,
    types: Option<&TypeDb>,
    module: &str,
    entry: &SymbolEntry,
    at: u64,
    with_types: bool,
) -> String {
    let bare = strip_parameters(&entry.name);
    let params = entry.name[bare.len()..].trim();
    let typed = types.and_then(|t| Some((t, t.symbol_type(bare)?)));
    let prefix = |type_name: &str| {
        if with_types {
            format!("{type_name} ")
        } else {
            String::new()
        }
    };
    match typed {
        Some((db, SymbolType::Data { ty })) => {
            let read = |a: u64, len: usize| session.read_virtual(a, len);
            let value = if read(at, 1).first().copied().flatten().is_none() {
                // WinDbg's words for a variable the dump did not capture.
                "<Memory access error>".to_string()
            } else {
                dt::value(db, ty, at, &read)
            };
            format!("{}{module}!{bare} = {value}", prefix(&dt::c_name(db, ty)))
        }
        Some((db, SymbolType::Function { returns })) => format!(
            "{}{module}!{bare} {}",
            prefix(&returns.map_or_else(|| "void".to_string(), |r| dt::c_name(db, r))),
            windbg_parameters(params)
        ),
        None if entry.is_function && !params.is_empty() => format!(
            "{}{module}!{bare} {}",
            prefix("<NoType>"),
            windbg_parameters(params)
        ),
        None => format!("{}{module}!{}", prefix("<NoType>"), entry.name),
    }
}

/// A parameter list as WinDbg prints it: `(void)` for none, a space before `*` and `&`
/// (`(int *, char **)`).
fn windbg_parameters(params: &str) -> String {
    if params.is_empty() || params == "()" {
        return "(void)".to_string();
    }
    let mut out = String::with_capacity(params.len() + 4);
    let mut previous = ' ';
    for c in params.chars() {
        if matches!(c, '*' | '&') && !matches!(previous, ' ' | '*' | '&' | '(') {
            out.push(' ');
        }
        out.push(c);
        previous = c;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::windbg_parameters;

    #[test]
    fn parameter_lists_in_windbg_shape() {
        assert_eq!(windbg_parameters("()"), "(void)");
        assert_eq!(windbg_parameters("(int*, char**)"), "(int *, char **)");
        assert_eq!(
            windbg_parameters("(std::string const&)"),
            "(std::string const &)"
        );
    }
}
