//! What a front end lets commands do: refuse host effects, and gate the files commands write
//! and the symbol paths they set. Read by the runner from each command's
//! [`CommandSpec`](crate::spec::CommandSpec) metadata.

use crate::error::CommandError;

/// What a front end lets commands do, read from each command's [`CommandSpec`] metadata
/// (never from its name, so aliases cannot slip past).
#[derive(Clone, Default)]
pub struct Policy {
    /// Refuse commands that act on the host (choose which files or servers are read, start
    /// processes) when they are given arguments; showing state stays allowed.
    pub refuse_host_effects: bool,
    /// Where commands that write a file the user names (`.dump FILE`) may write: the gate
    /// answers the path to write or refuses it. `None`: any path, as given.
    pub file_gate: Option<FileGate>,
    /// Under `refuse_host_effects`, lets commands that set the symbol path run when the gate
    /// admits the new path (`.sympath+ DIR` with DIR in an allowed folder). `None`: refused.
    pub symbol_path_gate: Option<SymbolPathGate>,
}

/// A front end's check of a symbol path a command is about to set: `Ok` or the refusal
/// (`path_not_allowed`, a server not configured, …).
pub type SymbolPathGate =
    std::sync::Arc<dyn Fn(&ntdbg_symbols::SymbolPath) -> Result<(), CommandError> + Send + Sync>;

/// A front end's check of a file a command is about to write: the path to write (resolved),
/// or the refusal (`path_not_allowed`).
pub type FileGate = std::sync::Arc<
    dyn Fn(&std::path::Path) -> Result<std::path::PathBuf, CommandError> + Send + Sync,
>;

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("refuse_host_effects", &self.refuse_host_effects)
            .field("file_gate", &self.file_gate.is_some())
            .field("symbol_path_gate", &self.symbol_path_gate.is_some())
            .finish()
    }
}
