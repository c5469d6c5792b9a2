//! Debugger meta-commands: `?` (evaluate), `help`, `.sympath`, `.sympath+`, `.reload`.

use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::render::addr;
use crate::spec::{CommandSpec, HostEffect, Invocation, Needs};
use crate::table;
use ntdbg_engine::Session;
use ntdbg_symbols::{SymbolPath, SymbolPathEntry, MICROSOFT_SYMBOL_SERVER};

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["?"],
        "? EXPR",
        "evaluate a MASM expression",
        "Numbers are hex by default (`0n10` is decimal); `poi(ADDR)` reads a pointer; `@rax` a \
         register; `mod!sym+0x10` a symbol.",
        evaluate,
    ),
    // Help reads no target: it answers on a running, exited or detached one too.
    CommandSpec {
        needs: Needs::Any,
        ..CommandSpec::inspect(
            &["help", ".help"],
            "help [COMMAND]",
            "list commands, or describe one",
            "",
            help,
        )
    },
    // Setting the path decides which host folders and servers are read: a host effect.
    CommandSpec {
        host_effect: HostEffect::SymbolPath,
        ..CommandSpec::inspect(
            &[".sympath", ".sympath+"],
            ".sympath [PATH] | .sympath+ PATH",
            "show, replace or extend the symbol path (reloads symbols)",
            "PATH uses WinDbg syntax: directories, cache*DIR, srv*CACHE*URL, separated by `;`. \
             A front end may limit it (the MCP server: folders inside its allowed directories, \
             servers it was configured with).",
            sympath,
        )
    },
    CommandSpec {
        host_effect: HostEffect::SymbolPath,
        ..CommandSpec::inspect(
            &[".symfix", ".symfix+"],
            ".symfix [CACHE] | .symfix+ [CACHE]",
            "use (or add) Microsoft's symbol server, downloading into CACHE (reloads symbols)",
            "Without CACHE downloads go to the per-user cache. Offline sessions keep using only \
             what is already cached.",
            symfix,
        )
    },
    CommandSpec::inspect(
        &[".reload"],
        ".reload [/f [MODULE]]",
        "forget loaded symbols so they are searched again; /f loads them now",
        "Without /f symbols load again on first use (`lm` shows them `(deferred)` until then); \
         /f loads every module's symbols at once, or only MODULE's.",
        reload,
    ),
];

fn evaluate(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let expr = inv.args.trim();
    if expr.is_empty() {
        return Err(CommandError::syntax("? needs an expression").with_hint("e.g. `? @rsp+0x10`"));
    }
    let v = session.evaluate(expr)?;
    let shown = if session.arch().pointer_size() == 4 && v <= u64::from(u32::MAX) {
        (v as u32 as i32).to_string()
    } else {
        (v as i64).to_string()
    };
    let text = format!("Evaluate expression: {shown} = {}\n", addr(session, v));
    Ok(CommandOutput::with(
        text,
        TypedResult::Value {
            hex: format!("{v:#x}"),
            decimal: v.to_string(),
        },
    ))
}

fn help(_session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let topic = inv.args.trim();
    if !topic.is_empty() {
        let spec = table::lookup(topic).ok_or_else(|| {
            // The same nearest names (or what to use instead) as running it would give.
            crate::suggest::unknown_command(topic)
                .with_message(format!("No help for '{topic}': unknown command"))
        })?;
        let mut text = format!("{}\n  {}\n", spec.usage, spec.summary);
        if !spec.details.is_empty() {
            text.push_str(&format!("\n  {}\n", spec.details));
        }
        return Ok(CommandOutput::text(text));
    }
    let mut text = String::from("Commands (WinDbg syntax; separate several with `;`):\n");
    for spec in table::all() {
        text.push_str(&format!("  {:<34} {}\n", spec.usage, spec.summary));
    }
    text.push_str("\n`help COMMAND` describes one command.\n");
    Ok(CommandOutput::text(text))
}

fn sympath(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let args = inv.args.trim();
    let mut warnings = String::new();
    if !args.is_empty() {
        let given = parse_symbol_path(args)?;
        warnings = inaccessible_folders(&given);
        set_symbol_path(session, inv, given)?;
    }
    Ok(CommandOutput::text(format!(
        "Symbol search path is: {}\n{warnings}",
        session.symbols().path()
    )))
}

/// WinDbg's warning for each plain folder of `given` that is not a readable directory (the path
/// is still set: the folder may appear later).
fn inaccessible_folders(given: &SymbolPath) -> String {
    given
        .entries()
        .iter()
        .filter_map(|entry| match entry {
            SymbolPathEntry::Local(dir) if !dir.is_dir() => {
                Some(format!("WARNING: Inaccessible path: '{}'\n", dir.display()))
            }
            _ => None,
        })
        .collect()
}

fn symfix(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let cache = inv.args.trim();
    let text = if cache.is_empty() {
        format!("srv*{MICROSOFT_SYMBOL_SERVER}")
    } else {
        format!("srv*{cache}*{MICROSOFT_SYMBOL_SERVER}")
    };
    set_symbol_path(session, inv, parse_symbol_path(&text)?)?;
    Ok(CommandOutput::text(format!(
        "Symbol search path is: {}\n",
        session.symbols().path()
    )))
}

fn parse_symbol_path(text: &str) -> Result<SymbolPath, CommandError> {
    SymbolPath::parse(text)
        .map_err(|e| CommandError::syntax(format!("Bad symbol path '{text}': {e}")))
}

/// Replaces the symbol path with `given` (`.sympath`, `.symfix`) or appends it (`.sympath+`,
/// `.symfix+`), once the front end admits `given`; loaded symbols are forgotten, so the next
/// command searches the new path.
fn set_symbol_path(
    session: &mut Session,
    inv: &Invocation<'_>,
    given: SymbolPath,
) -> Result<(), CommandError> {
    match &inv.policy.symbol_path_gate {
        Some(gate) => gate(&given)?,
        None if inv.policy.refuse_host_effects => {
            return Err(crate::run::host_effect_refused(inv.name))
        }
        None => {}
    }
    let path = if inv.name.ends_with('+') {
        let mut path = session.symbols().path().clone();
        for entry in given.entries() {
            path.push(entry.clone());
        }
        path
    } else {
        given
    };
    session.set_symbol_path(path);
    Ok(())
}

fn reload(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let args = inv.args.trim();
    if !(args.is_empty() || args.starts_with("/f")) {
        return Err(CommandError::syntax(format!(
            ".reload: unsupported option '{args}' (use /f)"
        )));
    }
    let path = session.symbols().path().clone();
    session.set_symbol_path(path);
    if args.starts_with("/f") {
        // `/f`: load now instead of on first use (`/f NAME`: only that module).
        let name = args.trim_start_matches("/f").trim();
        let modules: Vec<_> = session
            .target()
            .modules()
            .by_addr()
            .filter(|m| {
                name.is_empty()
                    || ntdbg_engine::module_name(&m.name).eq_ignore_ascii_case(name)
                    || m.name
                        .rsplit(['\\', '/'])
                        .next()
                        .is_some_and(|f| f.eq_ignore_ascii_case(name))
            })
            .cloned()
            .collect();
        if modules.is_empty() {
            return Err(CommandError::new(
                ErrorCode::NoSuchModule,
                format!(".reload: no module named '{name}'"),
            )
            .with_hint("`lm` lists every module"));
        }
        let refs: Vec<_> = modules.iter().collect();
        session.preload_symbols(&refs);
    }
    Ok(CommandOutput::text("Reloading current modules\n"))
}
