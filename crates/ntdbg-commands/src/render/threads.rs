//! The `~` thread list and its lines, shared by `~` and the runner (`~N`, `~*CMD` headers).

use crate::error::CommandError;
use crate::output::{CommandOutput, ThreadRow, TypedResult};
use crate::render::addr;
use ntdbg_engine::Session;

/// The `~` listing, of all threads or of the selected ones.
pub(crate) fn list(
    session: &Session,
    only: Option<&[usize]>,
) -> Result<CommandOutput, CommandError> {
    let count = session.target().threads().len();
    let indices: Vec<usize> = match only {
        Some(sel) => sel.to_vec(),
        None => (0..count).collect(),
    };
    let mut text = String::new();
    let mut rows = Vec::new();
    for i in indices {
        text.push_str(&header_line(session, i));
        text.push('\n');
        let t = &session.target().threads()[i];
        rows.push(ThreadRow {
            index: session.thread_number(i),
            id: format!("{:#x}", t.id),
            name: t.name.clone(),
            teb: format!("{:#x}", t.teb),
            current: i == session.current_thread_index(),
            event: Some(i) == session.event_thread_index(),
        });
    }
    if count == 0 {
        text.push_str(
            if session.target().kind() == ntdbg_targets::TargetKind::Live {
                "The live target lists no threads.\n"
            } else {
                "The dump has no thread list.\n"
            },
        );
    }
    Ok(CommandOutput::with(
        text,
        TypedResult::Threads { threads: rows },
    ))
}

/// One `~` line: `.  0  Id: 1a8.36 Suspend: 0 Teb: 00000000`7ffde000 Unfrozen "name"`.
pub(crate) fn header_line(session: &Session, index: usize) -> String {
    let Some(t) = session.target().threads().get(index) else {
        return String::new();
    };
    let marker = if index == session.current_thread_index() {
        '.'
    } else if Some(index) == session.event_thread_index() {
        '#'
    } else {
        ' '
    };
    let pid = session.target().system().process_id.unwrap_or(0);
    let number = session.thread_number(index);
    let name = t
        .name
        .as_ref()
        .map(|n| format!(" \"{n}\""))
        .unwrap_or_default();
    format!(
        "{marker}{number:>3}  Id: {pid:x}.{:x} Suspend: {} Teb: {} Unfrozen{name}",
        t.id,
        t.suspend_count,
        addr(session, t.teb)
    )
}
