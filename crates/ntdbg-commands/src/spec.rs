//! What a command is: its names, help, what it needs, what it does, and its handler.

use crate::error::CommandError;
use crate::output::CommandOutput;
use ntdbg_engine::Session;

/// What state the target must be in for a command to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Runs on any target.
    Any,
    /// Needs a stopped target (every dump is stopped).
    Halted,
}

/// What a command does to the target's execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Only reads or changes debugger state.
    None,
    /// Steps the target (`p`, `t`).
    Step,
    /// Resumes the target (`g`).
    Run,
    /// Sets or changes breakpoints (writes to the target).
    Breakpoint,
    /// Writes the target's memory or registers (`eb`, `ed`, `ea`…).
    Write,
}

/// What a command does on the host (beyond the target): front ends decide what they allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostEffect {
    /// Nothing on the host.
    None,
    /// Chooses the folders and servers symbols are read from (`.sympath DIR`, `.symfix`):
    /// allowed under a host policy only through its symbol-path gate.
    SymbolPath,
}

/// The arguments a handler receives.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    /// The command word as typed (original case, e.g. `kP`).
    pub name: &'a str,
    /// The rest of the command, trimmed.
    pub args: &'a str,
    /// The table entry the command word resolved to (looked up once by the runner).
    pub spec: &'static CommandSpec,
    /// The front end's policy (its check of files a command writes).
    pub policy: &'a crate::policy::Policy,
}

impl Invocation<'_> {
    /// The path to write for a file the user named: as the front end's gate resolves it
    /// (inside its allowed folders), or as given without a gate.
    ///
    /// # Errors
    /// The gate's refusal (`path_not_allowed`, …).
    pub fn writable_path(&self, path: &str) -> Result<std::path::PathBuf, CommandError> {
        match &self.policy.file_gate {
            Some(gate) => gate(std::path::Path::new(path)),
            None => Ok(std::path::PathBuf::from(path)),
        }
    }
}

/// A command handler. Handlers never print: they return text and a typed result.
pub type Handler = fn(&mut Session, &Invocation<'_>) -> Result<CommandOutput, CommandError>;

/// One command of the table.
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
    /// Names the command answers to (lower case; the first is the main one).
    pub names: &'static [&'static str],
    /// Usage line, e.g. `db [ADDR] [L COUNT]`.
    pub usage: &'static str,
    /// One line for the help list.
    pub summary: &'static str,
    /// Longer help, including deliberate differences from WinDbg.
    pub details: &'static str,
    /// Target state the command needs.
    pub needs: Needs,
    /// What it does to execution.
    pub effect: Effect,
    /// What it does on the host with arguments (a front end may refuse or gate it).
    pub host_effect: HostEffect,
    /// Whether it takes no arguments: the runner refuses any before the handler runs.
    pub no_args: bool,
    /// The handler.
    pub handler: Handler,
}

impl CommandSpec {
    /// A read-only command that runs on any stopped target (the common case).
    pub const fn inspect(
        names: &'static [&'static str],
        usage: &'static str,
        summary: &'static str,
        details: &'static str,
        handler: Handler,
    ) -> CommandSpec {
        CommandSpec::acting(names, usage, summary, details, Effect::None, handler)
    }

    /// A command that runs on a stopped target and has `effect` on its execution (run
    /// control, breakpoints).
    pub const fn acting(
        names: &'static [&'static str],
        usage: &'static str,
        summary: &'static str,
        details: &'static str,
        effect: Effect,
        handler: Handler,
    ) -> CommandSpec {
        CommandSpec {
            names,
            usage,
            summary,
            details,
            needs: Needs::Halted,
            effect,
            host_effect: HostEffect::None,
            no_args: false,
            handler,
        }
    }

    /// The same command, taking no arguments (the runner refuses any with a syntax error).
    pub const fn no_args(self) -> CommandSpec {
        CommandSpec {
            no_args: true,
            ..self
        }
    }
}
