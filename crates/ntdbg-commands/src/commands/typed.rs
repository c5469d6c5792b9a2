//! Typed values: `?? EXPR` (WinDbg's C++ expression evaluator) and `dx [-r N] EXPR`.

use std::fmt::Write as _;

use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, MemberValue, TypedResult};
use crate::render::dt;
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::expr::ExprError;
use ntdbg_engine::typed::{self, address_text, Style, Value, ValueView, MAX_EXPANSION};
use ntdbg_engine::Session;

/// What C++ expressions accept, for the help of `??` and `dx`.
const CPP_FORMS: &str = "C++ syntax: numbers are decimal unless `0x` (hex) or `0` (octal); \
     names are the selected frame's variables, then globals (`g_x`, `crashy!g_x`); registers \
     need `@` (`@rcx`); `a->b`, `a.b`, `*p`, `&x`, `p[i]`, casts to PDB types \
     (`(crashy!Node*)@rcx`, `(int)x`), `+ - * / % << >> & | ^ ~ !`, comparisons, `&& ||`, \
     `?:` (C's integer promotions; pointer arithmetic scaled by the pointee's size), \
     `sizeof(TYPE)`, `sizeof x`, `@@masm(EXPR)` for a MASM part. Not evaluated: floating-point \
     arithmetic, function calls, templates, enumerator names.";

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["??"],
        "?? EXPR",
        "evaluate a C++ expression and show its typed value",
        "Prints the type and the value as WinDbg does (`int 0n5`, `char * 0x… \"text\"`, \
         `unsigned int64 0x10` for sizeof); a structure, or a pointer to one, is followed by its \
         members one level deep (`+0x000 Name : value`). Values the dump lacks print as \
         `<Memory access error>`, variables not valid at the frame's instruction as \
         `<value unavailable>`. Differs from WinDbg: floating-point values in shortest form, \
         registers all typed as pointer-sized unsigned integers, members of pointer type \
         without the pointee's type name.",
        cpp_evaluate,
    ),
    CommandSpec::inspect(
        &["dx"],
        "dx [-r[N]] EXPR",
        "display a C++ expression as WinDbg's data model does, with N levels of members",
        "`expr : value [Type: T]`, then members indented (`[+0x008] next : 0x0 [Type: Node *]`) \
         and array elements (`[0] : 5 [Type: int]`, at most 100): structures, the structures \
         pointers point to, and arrays expand N levels (default 1, at most 8). Signed integers \
         print in decimal, unsigned ones and pointers in hex. Only the native C++ view: no \
         NatVis, LINQ, `@$` objects of the data model, `-g`/`-c`/`-v` or format specifiers.",
        dx,
    ),
];

fn cpp_evaluate(
    session: &mut Session,
    inv: &Invocation<'_>,
) -> Result<CommandOutput, CommandError> {
    let expr = inv.args.trim();
    if expr.is_empty() {
        return Err(CommandError::syntax("?? needs a C++ expression")
            .with_hint("e.g. `?? sizeof(crashy!Node)` or `?? (int)@rcx`"));
    }
    let value = typed::evaluate_in_session(session, expr).map_err(expr_error)?;
    let view = view_of(session, &value, Style::Dv, 1)?;
    let mut text = match (view.text.as_str(), view.address) {
        // A structure or array by value: its type, and an array's address.
        (t, address) if t.is_empty() || t == view.type_name => match address {
            Some(a) if view.children.is_empty() => {
                format!(
                    "{} {}\n",
                    view.type_name,
                    address_text(a, pointer_size(session))
                )
            }
            _ => format!("{}\n", view.type_name),
        },
        (t, _) => format!("{} {t}\n", view.type_name),
    };
    for child in &view.children {
        let value = match child.view.text.as_str() {
            "" => &child.view.type_name,
            t => t,
        };
        let _ = writeln!(
            text,
            "   +{:#05x} {:<16} : {}",
            child.offset.unwrap_or(0),
            child.name,
            strip_keyword(value)
        );
    }
    Ok(CommandOutput::with(text, typed_result(expr, &view)))
}

fn dx(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let (depth, expr) = dx_args(inv.args)?;
    let value = typed::evaluate_in_session(session, expr).map_err(expr_error)?;
    let view = view_of(session, &value, Style::Dx, depth)?;
    let mut text = String::new();
    dx_line(&mut text, expr, None, &view, 0);
    Ok(CommandOutput::with(text, typed_result(expr, &view)))
}

/// The target's pointer size, as `address_text` takes it.
fn pointer_size(session: &Session) -> u8 {
    if session.arch().pointer_size() == 4 {
        4
    } else {
        8
    }
}

/// `-r N`, `-rN` and the expression after them.
fn dx_args(args: &str) -> Result<(usize, &str), CommandError> {
    let usage = "dx [-r[N]] EXPR";
    let mut rest = args.trim_start();
    let mut depth = 1;
    while let Some(option) = rest.strip_prefix('-') {
        let (word, after) = option
            .split_once(char::is_whitespace)
            .unwrap_or((option, ""));
        let Some(n) = word.strip_prefix('r') else {
            return Err(
                CommandError::syntax(format!("dx: unsupported option '-{word}'")).with_hint(usage),
            );
        };
        rest = after.trim_start();
        depth = if n.is_empty() {
            // `-r N` or `-r EXPR`: a number alone is the depth only when an expression follows.
            let (next, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            match next.parse::<usize>() {
                Ok(d) if !tail.trim().is_empty() => {
                    rest = tail.trim_start();
                    d
                }
                _ => 1,
            }
        } else {
            n.parse().map_err(|_| {
                CommandError::syntax(format!("dx: bad recursion depth '-{word}'")).with_hint(usage)
            })?
        };
    }
    if rest.trim().is_empty() {
        return Err(CommandError::syntax("dx needs a C++ expression").with_hint(usage));
    }
    Ok((depth.min(MAX_EXPANSION), rest.trim()))
}

/// One `dx` line and its children: `label : value [Type: T]`, members as
/// `[+0x008] name : value [Type: T]`, indented four spaces a level.
fn dx_line(out: &mut String, label: &str, offset: Option<u64>, view: &ValueView, level: usize) {
    let indent = "    ".repeat(level);
    let label = match (level, offset) {
        (0, _) => label.to_string(),
        (_, Some(o)) => format!("[+{o:#05x}] {label:<16}"),
        (_, None) => format!("{label:<16}"),
    };
    if view.text.is_empty() {
        let _ = writeln!(out, "{indent}{label} [Type: {}]", view.type_name);
    } else {
        let _ = writeln!(
            out,
            "{indent}{label} : {} [Type: {}]",
            view.text, view.type_name
        );
    }
    for child in &view.children {
        dx_line(out, &child.name, child.offset, &child.view, level + 1);
    }
}

/// `dt VAR [FIELD...]`: the structure `expr` is or points to, laid out as `dt TYPE ADDR`
/// does (a pointer's value first), or a scalar's type and value.
pub(crate) fn dt_value(
    session: &Session,
    expr: &str,
    fields: &[&str],
    recursion: usize,
) -> Result<CommandOutput, CommandError> {
    let value = typed::evaluate_in_session(session, expr).map_err(expr_error)?;
    let view = view_of(session, &value, Style::Dv, 0)?;
    let Some(record) = typed::record_at(session, &value) else {
        let text = format!("{} {}\n", view.type_name, view.text);
        return Ok(CommandOutput::with(text, typed_result(expr, &view)));
    };
    let no_types = || {
        CommandError::new(
            ErrorCode::NoTypeInformation,
            format!("No type information for '{}'", record.name),
        )
    };
    let module = session.module_at(record.module_base).ok_or_else(no_types)?;
    let types = session
        .module_symbols(module)
        .types()
        .map_err(|_| no_types())?;
    let read = |addr: u64, len: usize| session.read_virtual(addr, len);
    let options = dt::DtOptions {
        fields,
        recursion: recursion.min(dt::MAX_RECURSION),
        ..Default::default()
    };
    let layout = dt::layout(
        &types,
        &ntdbg_engine::module_name(&module.name),
        &record.name,
        Some((record.address, &read as dt::ReadMemory<'_>)),
        &options,
    )
    .ok_or_else(no_types)?;
    // The layout's first line names the type; `dt VAR` shows the pointer's value instead.
    let body = layout.split_once('\n').map_or("", |(_, rest)| rest);
    let text = if record.through_pointer {
        format!("{}\n{body}", view.text)
    } else {
        body.to_string()
    };
    Ok(CommandOutput::with(text, typed_result(expr, &view)))
}

/// An address argument: a MASM expression, else a C++ one (`p->next`, a local's value).
pub(crate) fn address(session: &Session, text: &str) -> Result<u64, CommandError> {
    let masm = match session.evaluate(text) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    typed::evaluate_in_session(session, text)
        .ok()
        .and_then(|v| typed::as_number(session, &v))
        .ok_or_else(|| CommandError::from(masm))
}

/// A value's view, or why there is none.
fn view_of(
    session: &Session,
    value: &Value,
    style: Style,
    depth: usize,
) -> Result<ValueView, CommandError> {
    typed::view(session, value, style, depth).ok_or_else(|| {
        CommandError::new(
            ErrorCode::NoTypeInformation,
            "No type information for the value's module",
        )
        .with_hint("types come from the module's PDB: check `lm` and the symbol path")
    })
}

/// `struct Node` → `Node`, as `dt` names a structure member's type.
fn strip_keyword(text: &str) -> &str {
    ["struct ", "class ", "union "]
        .iter()
        .find_map(|k| text.strip_prefix(k))
        .unwrap_or(text)
}

/// An evaluation error with what to try instead.
pub(crate) fn expr_error(e: ExprError) -> CommandError {
    let hint = match e.code() {
        "unresolved" => Some(
            "names are the frame's variables (`dv`) and globals (`x MOD!*`); registers need \
             `@` (`@rcx`); types come from the PDB (`dt MOD!*`)",
        ),
        "memory_access" => Some("the memory is not there to read (`!address` shows the regions)"),
        "type_conflict" => Some(
            "the operator does not apply to that type: `->`/`.` need a structure (or a pointer \
             to one), `*` and `[]` a pointer or array",
        ),
        "syntax_error" | "missing_expression" => Some(CPP_FORMS),
        _ => None,
    };
    let err = CommandError::from(e);
    match hint {
        Some(h) => err.with_hint(h),
        None => err,
    }
}

/// The typed result of a rendered value.
pub(crate) fn typed_result(expression: &str, view: &ValueView) -> TypedResult {
    TypedResult::TypedValue {
        expression: expression.to_string(),
        type_name: view.type_name.clone(),
        value: view.text.clone(),
        address: view.address.map(|a| format!("{a:#x}")),
        members: members(view),
    }
}

fn members(view: &ValueView) -> Vec<MemberValue> {
    view.children
        .iter()
        .map(|c| MemberValue {
            name: c.name.clone(),
            offset: c.offset.map(|o| format!("{o:#x}")),
            type_name: c.view.type_name.clone(),
            value: c.view.text.clone(),
            members: members(&c.view),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dx_options() {
        assert_eq!(dx_args("x").unwrap(), (1, "x"));
        assert_eq!(dx_args("-r2 p->next").unwrap(), (2, "p->next"));
        assert_eq!(dx_args("-r 3 p").unwrap(), (3, "p"));
        assert_eq!(dx_args("-r p").unwrap(), (1, "p"));
        assert_eq!(dx_args("-r99 p").unwrap(), (MAX_EXPANSION, "p"));
        assert!(dx_args("-g p").is_err());
        assert!(dx_args("-r2").is_err());
        assert!(dx_args("").is_err());
    }
}
