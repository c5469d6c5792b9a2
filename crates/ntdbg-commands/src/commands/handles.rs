//! Handles: `!handle [HANDLE [FLAGS [TYPE]]]` from the dump's HandleData stream.

use super::util::eval;
use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::render::c_hex;
use crate::rows::{HandleRow, TypeCount};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::Session;
use ntdbg_targets::HandleInfo;

pub(crate) const COMMANDS: &[CommandSpec] = &[CommandSpec::inspect(
    &["!handle"],
    "!handle [HANDLE [FLAGS [TYPE]]]",
    "the process's handles from the dump's HandleData stream, with a count by type",
    "HANDLE 0 or -1 (or none) shows every handle. FLAGS (default 1) adds: 1 the type, 2 \
     attributes, granted access and reference counts, 4 the object name, 8 object-specific \
     information (which this version does not decode: it says how many records the dump \
     holds). TYPE keeps the handles of one type (`Event`, `File`, …). Listing every handle ends \
     with WinDbg's summary (`N Handles`, then `Type Count`). Dumps written without handle data \
     (MiniDumpWithHandleData) say so.",
    handle,
)];

/// What `!handle`'s flags ask for.
#[derive(Debug, Clone, Copy)]
struct Show {
    kind: bool,
    basic: bool,
    name: bool,
    object: bool,
}

impl Show {
    fn from_flags(flags: u64) -> Show {
        Show {
            kind: flags & 1 != 0,
            basic: flags & 2 != 0,
            name: flags & 4 != 0,
            object: flags & 8 != 0,
        }
    }
}

fn handle(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let words: Vec<&str> = inv.args.split_whitespace().collect();
    if words.len() > 3 {
        return Err(CommandError::syntax(format!(
            "Syntax error in '!handle {}': expected [HANDLE [FLAGS [TYPE]]]",
            excerpt(inv.args)
        )));
    }
    let wanted = match words.first() {
        None => None,
        Some(w) => Some(eval(session, w)?).filter(|&h| h != 0 && h != u64::MAX && h != 0xffff_ffff),
    };
    let flags = match words.get(1) {
        Some(w) => eval(session, w)?,
        None => 1,
    };
    let type_filter = words.get(2).copied();
    let Some(all) = session.target().handles() else {
        return Err(CommandError::new(
            ErrorCode::NoHandleData,
            "The dump has no handle data (HandleData stream)",
        )
        .with_hint("the dump was written without MiniDumpWithHandleData"));
    };
    let selected: Vec<&HandleInfo> = all
        .iter()
        .filter(|h| wanted.is_none_or(|w| h.handle == w))
        .filter(|h| {
            type_filter.is_none_or(|t| {
                h.type_name
                    .as_deref()
                    .is_some_and(|n| n.eq_ignore_ascii_case(t))
            })
        })
        .collect();
    if let (Some(w), true) = (wanted, selected.is_empty()) {
        return Err(CommandError::new(
            ErrorCode::NoSuchHandle,
            format!("Handle {w:x} is not in the dump's handle list"),
        )
        .with_hint("`!handle` lists every handle"));
    }
    let show = Show::from_flags(flags);
    let mut text = String::new();
    for h in &selected {
        render_handle(&mut text, h, show);
    }
    let by_type = count_by_type(&selected);
    if wanted.is_none() {
        text.push_str(&format!("{} Handles\n", selected.len()));
        text.push_str(&format!("{:<15}\tCount\n", "Type"));
        for t in &by_type {
            text.push_str(&format!("{:<15}\t{}\n", t.type_name, t.count));
        }
    }
    let handles = selected.iter().map(|h| row(h)).collect();
    Ok(CommandOutput::with(
        text,
        TypedResult::Handles { handles, by_type },
    ))
}

/// One handle in WinDbg's layout (`Handle 4`, then one indented line per field asked for).
fn render_handle(text: &mut String, h: &HandleInfo, show: Show) {
    text.push_str(&format!("Handle {:x}\n", h.handle));
    let field = |text: &mut String, label: &str, value: &str| {
        text.push_str(&format!("  {label:<13}\t{value}\n"));
    };
    if show.kind {
        field(text, "Type", h.type_name.as_deref().unwrap_or(""));
    }
    if show.basic {
        field(text, "Attributes", &c_hex(u64::from(h.attributes)));
        field(
            text,
            "GrantedAccess",
            &format!("{}:", c_hex(u64::from(h.granted_access))),
        );
        let standard = standard_rights(h.granted_access);
        text.push_str(&format!(
            "         {}\n",
            if standard.is_empty() {
                "None".to_string()
            } else {
                standard.join(",")
            }
        ));
        field(text, "HandleCount", &h.handle_count.to_string());
        field(text, "PointerCount", &h.pointer_count.to_string());
    }
    if show.name {
        field(text, "Name", h.object_name.as_deref().unwrap_or("<none>"));
    }
    if show.object {
        match h.object_info_records {
            0 => text.push_str("  No object specific information available\n"),
            n => text.push_str(&format!(
                "  Object specific information: {n} record(s) in the dump, not decoded\n"
            )),
        }
    }
}

/// Names of the standard access rights (bits 16–20) in `mask`, as WinDbg lists them.
fn standard_rights(mask: u32) -> Vec<&'static str> {
    [
        (0x1_0000, "Delete"),
        (0x2_0000, "ReadControl"),
        (0x4_0000, "WriteDac"),
        (0x8_0000, "WriteOwner"),
        (0x10_0000, "Synch"),
    ]
    .into_iter()
    .filter(|(bit, _)| mask & bit != 0)
    .map(|(_, name)| name)
    .collect()
}

/// Handles by type, types in order of first appearance; `None` for handles without a type.
fn count_by_type(handles: &[&HandleInfo]) -> Vec<TypeCount> {
    let mut counts: Vec<TypeCount> = Vec::new();
    for h in handles {
        let name = h.type_name.as_deref().unwrap_or("None");
        match counts.iter_mut().find(|c| c.type_name == name) {
            Some(c) => c.count += 1,
            None => counts.push(TypeCount {
                type_name: name.to_string(),
                count: 1,
            }),
        }
    }
    counts
}

fn row(h: &HandleInfo) -> HandleRow {
    HandleRow {
        handle: format!("{:#x}", h.handle),
        type_name: h.type_name.clone(),
        name: h.object_name.clone(),
        attributes: format!("{:#x}", h.attributes),
        granted_access: format!("{:#x}", h.granted_access),
        handle_count: h.handle_count,
        pointer_count: h.pointer_count,
        object_info_records: h.object_info_records,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(handle: u64, type_name: Option<&str>) -> HandleInfo {
        HandleInfo {
            handle,
            type_name: type_name.map(str::to_string),
            object_name: None,
            attributes: 0,
            granted_access: 0x1f_0003,
            handle_count: 1,
            pointer_count: 2,
            object_info_records: 0,
        }
    }

    #[test]
    fn types_are_counted_in_order_of_appearance() {
        let a = info(4, Some("Event"));
        let b = info(8, None);
        let c = info(0xc, Some("Event"));
        let counts = count_by_type(&[&a, &b, &c]);
        let pairs: Vec<(&str, usize)> = counts
            .iter()
            .map(|c| (c.type_name.as_str(), c.count))
            .collect();
        assert_eq!(pairs, [("Event", 2), ("None", 1)]);
    }

    #[test]
    fn all_flags_render_every_field() {
        let mut text = String::new();
        render_handle(&mut text, &info(0x10, Some("Event")), Show::from_flags(0xf));
        assert_eq!(
            text,
            "Handle 10\n  Type         \tEvent\n  Attributes   \t0\n  GrantedAccess\t0x1f0003:\n         \
             Delete,ReadControl,WriteDac,WriteOwner,Synch\n  HandleCount  \t1\n  PointerCount \t2\n  \
             Name         \t<none>\n  No object specific information available\n"
        );
    }
}
