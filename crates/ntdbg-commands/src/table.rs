//! The command table: every family's commands joined in help order, and lookup by name.

use crate::commands;
use crate::spec::CommandSpec;

/// Every command, in the order `help` lists them.
pub fn all() -> impl Iterator<Item = &'static CommandSpec> {
    [
        commands::events::COMMANDS,
        commands::run_control::COMMANDS,
        commands::breakpoints::COMMANDS,
        commands::event_filters::COMMANDS,
        commands::dump_file::COMMANDS,
        commands::kernel::COMMANDS,
        commands::kernel_objects::COMMANDS,
        commands::registers::COMMANDS,
        commands::stack::COMMANDS,
        commands::frames::COMMANDS,
        commands::threads::COMMANDS,
        commands::threads_info::COMMANDS,
        commands::handles::COMMANDS,
        commands::locks::COMMANDS,
        commands::modules::COMMANDS,
        commands::pe_headers::COMMANDS,
        commands::memory::COMMANDS,
        commands::edit::COMMANDS,
        commands::search::COMMANDS,
        commands::address::COMMANDS,
        commands::disasm::COMMANDS,
        commands::symbols::COMMANDS,
        commands::types::COMMANDS,
        commands::typed::COMMANDS,
        commands::process::COMMANDS,
        commands::errors::COMMANDS,
        commands::meta::COMMANDS,
    ]
    .into_iter()
    .flatten()
}

#[cfg(test)]
thread_local! {
    /// How many look-ups this thread made: the runner must make one per command.
    pub(crate) static LOOKUPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The command answering to `name` (case-insensitive, except that `kP` is its own command).
pub fn lookup(name: &str) -> Option<&'static CommandSpec> {
    #[cfg(test)]
    LOOKUPS.with(|n| n.set(n.get() + 1));
    let exact = all().find(|c| c.names.contains(&name));
    exact.or_else(|| {
        let lower = name.to_ascii_lowercase();
        all().find(|c| c.names.contains(&lower.as_str()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in all() {
            for n in c.names {
                assert!(seen.insert(*n), "command name {n} registered twice");
            }
        }
    }

    #[test]
    fn every_command_has_help() {
        for c in all() {
            assert!(!c.names.is_empty());
            assert!(!c.usage.is_empty(), "{:?} has no usage", c.names);
            assert!(!c.summary.is_empty(), "{:?} has no summary", c.names);
        }
    }
}
