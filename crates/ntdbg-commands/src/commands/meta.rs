//! Debugger meta-commands: `?` (evaluate), `help`, `.sympath`, `.sympath+`, `.reload`.

use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::render::addr;
use crate::spec::{CommandSpec, Invocation};
use crate::table;
use ntdbg_engine::Session;
use ntdbg_symbols::SymbolPath;

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["?"],
        "? EXPR",
        "evaluate a MASM expression",
        "Numbers are hex by default (`0n10` is decimal); `poi(ADDR)` reads a pointer; `@rax` a \
         register; `mod!sym+0x10` a symbol.",
        evaluate,
    ),
    CommandSpec::inspect(
        &["help", ".help"],
        "help [COMMAND]",
        "list commands, or describe one",
        "",
        help,
    ),
    // Setting the path decides which host folders and servers are read: a host effect.
    CommandSpec {
        host_effect: true,
        ..CommandSpec::inspect(
            &[".sympath", ".sympath+"],
            ".sympath [PATH] | .sympath+ PATH",
            "show, replace or extend the symbol path (reloads symbols)",
            "PATH uses WinDbg syntax: directories, cache*DIR, srv*CACHE*URL, separated by `;`. \
             A front end may allow only showing it (the MCP server does: the symbol path is \
             given when the dump is opened).",
            sympath,
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
            CommandError::new(
                ErrorCode::UnknownCommand,
                format!("No help for '{topic}': unknown command"),
            )
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
    if !args.is_empty() {
        let text = if inv.name.ends_with('+') {
            format!("{};{args}", session.symbols().path())
        } else {
            args.to_string()
        };
        let path = SymbolPath::parse(&text)
            .map_err(|e| CommandError::syntax(format!("Bad symbol path '{text}': {e}")))?;
        session.set_symbol_path(path);
    }
    Ok(CommandOutput::text(format!(
        "Symbol search path is: {}\n",
        session.symbols().path()
    )))
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
