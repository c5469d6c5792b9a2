//! Types: `dt [-v] [-a[N]] [-r[N]] [MOD!]TYPE [ADDR] [FIELD...]`, `dt VAR [FIELD...]`, and
//! `dt MOD!PATTERN` to list types.

use std::sync::Arc;

use crate::error::{CommandError, ErrorCode};
use crate::output::CommandOutput;
use crate::render::dt::{layout, DtOptions, ReadMemory, MAX_RECURSION};
use crate::spec::{CommandSpec, Invocation};
use minidump::MinidumpModule;
use ntdbg_engine::{module_name, Session};
use ntdbg_symbols::TypeDb;

/// The usage line.
const USAGE: &str = "dt [-v] [-a[N]] [-r[N]] [MOD!]TYPE [ADDR] [FIELD...] | dt VAR [FIELD...]";

pub(crate) const COMMANDS: &[CommandSpec] = &[CommandSpec::inspect(
    &["dt"],
    USAGE,
    "display a structure, union or enum from the PDB, with values at ADDR",
    "Fields print in WinDbg's layout (`+0x014 Flags : Uint4B`, bit fields as `Pos 0, 3 Bits`, \
     enums as `0n2 ( Name )`); with ADDR each field's value is read from the dump (`??` where \
     the dump has no bytes). -rN expands embedded structures N levels and, with ADDR, the \
     structures pointers point to (`Memory read error` when not in the dump). -v adds kinds, \
     element counts and sizes; -a[N] lists array elements one per line (with ADDR). FIELD names \
     (wildcards allowed) select fields. Typedef names work as the type they name. \
     `dt MOD!PATTERN*` lists the module's types that match. ADDR may be a C++ expression \
     (`p->next`, a variable); `dt VAR` (a variable or C++ expression without spaces) lays out \
     the structure it is or points to, or prints its value.",
    dt,
)];

/// A module's name and types.
struct Found {
    module: String,
    types: Arc<TypeDb>,
}

fn dt(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let mut words = inv.args.split_whitespace().peekable();
    let mut recursion = 0usize;
    let mut verbose = false;
    let mut array_elements = None;
    let mut type_name: Option<&str> = None;
    while let Some(w) = words.peek().copied() {
        let Some(opt) = w.strip_prefix('-') else {
            break;
        };
        words.next();
        if let Some(depth) = opt.strip_prefix('r') {
            recursion = if depth.is_empty() {
                // `-r N` or a bare `-r` (WinDbg's default depth is unlimited; ours is bounded).
                match words.peek().and_then(|n| n.parse::<usize>().ok()) {
                    Some(n) => {
                        words.next();
                        n
                    }
                    None => MAX_RECURSION,
                }
            } else {
                depth.parse().map_err(|_| {
                    CommandError::syntax(format!("dt: bad recursion depth '-{opt}'"))
                })?
            };
        } else if let Some(count) = opt.strip_prefix('a') {
            array_elements = Some(if count.is_empty() {
                0
            } else {
                count
                    .parse::<u64>()
                    .map_err(|_| CommandError::syntax(format!("dt: bad array count '-{opt}'")))?
            });
        } else if opt == "v" {
            verbose = true;
        } else if opt != "b" {
            return Err(
                CommandError::syntax(format!("dt: unsupported option '-{opt}'")).with_hint(USAGE),
            );
        }
    }
    if let Some(w) = words.next() {
        type_name = Some(w);
    }
    let Some(spec) = type_name else {
        return Err(CommandError::syntax("dt: missing type name").with_hint(USAGE));
    };
    let rest: Vec<&str> = words.collect();
    let (module, name) = match spec.split_once('!') {
        Some((m, n)) => (Some(m), n),
        None => (None, spec),
    };
    if name.is_empty() {
        return Err(CommandError::syntax("dt: missing type name after '!'"));
    }

    // `dt EXPR`: operators no type name or pattern has.
    if spec.contains(['(', ')', '[', '@', '&', '.', '-']) {
        return super::typed::dt_value(session, spec, &rest, recursion);
    }
    // `dt MOD!PATTERN` with wildcards: list the types.
    if name.contains(['*', '?']) {
        return list(session, module, name);
    }
    let found = match find_type(session, module, name) {
        Ok(found) => found,
        // `dt VAR` / `dt EXPR`: a variable or typed expression instead of a type.
        Err(err) => {
            return super::typed::dt_value(session, spec, &rest, recursion).map_err(|_| err)
        }
    };

    // The first word after the type is an address unless it names a field.
    let mut fields: Vec<&str> = Vec::new();
    let mut address = None;
    let known = found
        .types
        .fields(name)
        .unwrap_or_default()
        .into_iter()
        .map(|f| f.name)
        .collect::<Vec<_>>();
    for (i, w) in rest.iter().enumerate() {
        let is_field = known.iter().any(|f| ntdbg_symbols::wildcard_match(w, f));
        if i == 0 && !is_field {
            address = Some(super::typed::address(session, w)?);
        } else {
            fields.push(w);
        }
    }
    let read = |addr: u64, len: usize| session.read_virtual(addr, len);
    let options = DtOptions {
        fields: &fields,
        recursion,
        verbose,
        array_elements,
    };
    let text = layout(
        &found.types,
        &found.module,
        name,
        address.map(|a| (a, &read as ReadMemory<'_>)),
        &options,
    )
    .ok_or_else(|| not_found(spec))?;
    if !fields.is_empty() && text.lines().count() <= 1 {
        return Err(CommandError::new(
            ErrorCode::NoSuchField,
            format!("Cannot find specified field members: {}", fields.join(" ")),
        ));
    }
    Ok(CommandOutput::text(text))
}

fn not_found(spec: &str) -> CommandError {
    CommandError::new(ErrorCode::NoSuchType, format!("Symbol {spec} not found."))
        .with_hint("`dt MOD!*` lists a module's types; types come from the module's PDB")
}

/// The modules to search: the named one, or all (in address order), their symbols loaded
/// (in parallel when they may be downloaded).
fn candidates(
    session: &Session,
    module: Option<&str>,
) -> Result<Vec<MinidumpModule>, CommandError> {
    let modules = match module {
        Some(m) => session
            .module_by_name(m)
            .map(|m| vec![m.clone()])
            .ok_or_else(|| {
                CommandError::new(ErrorCode::NoSuchModule, format!("Module '{m}' not found"))
                    .with_hint("`lm` lists every module")
            })?,
        None => session.target().modules().by_addr().cloned().collect(),
    };
    session.preload_symbols(&modules.iter().collect::<Vec<_>>());
    Ok(modules)
}

fn find_type(session: &Session, module: Option<&str>, name: &str) -> Result<Found, CommandError> {
    let mut reasons = Vec::new();
    let modules = candidates(session, module)?;
    for m in modules {
        let symbols = session.module_symbols(&m);
        match symbols.types() {
            Ok(types) if types.contains(name) => {
                return Ok(Found {
                    module: module_name(&m.name),
                    types,
                })
            }
            Ok(_) => {}
            Err(why) => reasons.push(format!("{}: {why}", module_name(&m.name))),
        }
    }
    let spec = match module {
        Some(m) => format!("{m}!{name}"),
        None => name.to_string(),
    };
    let mut err = not_found(&spec);
    if module.is_some() && !reasons.is_empty() {
        err = err.with_hint(reasons.join("; "));
    }
    Err(err)
}

fn list(
    session: &Session,
    module: Option<&str>,
    pattern: &str,
) -> Result<CommandOutput, CommandError> {
    let mut text = String::new();
    let modules = candidates(session, module)?;
    for m in modules {
        let symbols = session.module_symbols(&m);
        let Ok(types) = symbols.types() else { continue };
        let short = module_name(&m.name);
        for n in types.find(pattern) {
            text.push_str(&format!("          {short}!{n}\n"));
        }
    }
    if text.is_empty() {
        return Err(not_found(&match module {
            Some(m) => format!("{m}!{pattern}"),
            None => pattern.to_string(),
        }));
    }
    Ok(CommandOutput::text(text))
}
