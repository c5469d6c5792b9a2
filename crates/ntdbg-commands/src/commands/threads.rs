//! Threads and the process: `~` (list), `~Ns` (handled by the runner), `|`.

use crate::error::CommandError;
use crate::output::CommandOutput;
use crate::render::threads::list;
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::Session;

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["~"],
        "~ | ~N | ~Ns | ~N CMD | ~*CMD | ~#CMD",
        "list threads; ~Ns makes thread N current; ~N CMD / ~*CMD run CMD on thread N / every thread",
        "`.` marks the current thread, `#` the thread of the last event. Thread names come from \
         the dump's ThreadNames stream when it has one.",
        tilde,
    )
    .no_args(),
    CommandSpec::inspect(&["|"], "|", "show the process", "", process)
    .no_args(),
];

fn tilde(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    list(session, None)
}

fn process(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let pid = session.target().system().process_id.unwrap_or(0);
    let image = session
        .target()
        .modules()
        .main_module()
        .map(|m| m.name.clone())
        .unwrap_or_else(|| "<unknown image>".into());
    Ok(CommandOutput::text(format!(
        ".  0\tid: {pid:x}\texamine\tname: {image}\n"
    )))
}
