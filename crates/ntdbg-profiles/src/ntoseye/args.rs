//! The ntoseye tools' arguments, as ntoseye declares them, and what ntdbg does with them.

use super::refusal::Refusal;
use crate::StartupTarget;
use ntdbg_engine::ErrorCode;
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::PathBuf;

/// `command`'s wait when `timeout_ms` is absent or 0.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// The longest `timeout_ms` ntoseye accepts.
pub const MAX_TIMEOUT_MS: u64 = 300_000;
/// ntoseye's default gdb stub address.
const DEFAULT_GDB: &str = "127.0.0.1:1234";

/// What `open` (or `--backend`) attaches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// KD over a Unix socket.
    Kd,
    /// KDNET over encrypted UDP.
    Kdnet,
    /// A GDB remote stub.
    Gdb,
    /// A VM's physical memory, without a debug transport.
    Memory,
    /// A crash dump file.
    Dump,
}

impl Backend {
    /// Every backend, as `--backend` spells them.
    const ALL: [Backend; 5] = [
        Backend::Kd,
        Backend::Kdnet,
        Backend::Gdb,
        Backend::Memory,
        Backend::Dump,
    ];

    /// The name ntoseye gives it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Kd => "kd",
            Backend::Kdnet => "kdnet",
            Backend::Gdb => "gdb",
            Backend::Memory => "memory",
            Backend::Dump => "dump",
        }
    }

    /// The backend called `name` (`--backend NAME`).
    ///
    /// # Errors
    /// No backend has that name (the message lists them).
    pub fn parse(name: &str) -> Result<Backend, String> {
        Backend::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Backend::ALL.iter().map(|b| b.name()).collect();
                format!("unknown backend {name:?}: use one of {}", names.join(", "))
            })
    }

    /// The ntdbg target for this backend and `connect`: a dump path, or `gdb:HOST:PORT`.
    ///
    /// # Errors
    /// The backend has no ntdbg transport (`not_available`), or `connect` is missing for
    /// a dump.
    pub fn target(self, connect: Option<&str>) -> Result<StartupTarget, Refusal> {
        let connect = connect.map(str::trim).filter(|c| !c.is_empty());
        match self {
            Backend::Dump => connect
                .map(|path| StartupTarget::Dump(PathBuf::from(path)))
                .ok_or_else(|| {
                    Refusal::params(
                        ErrorCode::InvalidArguments,
                        "dump requires 'connect' (the .dmp path)",
                        "give the dump's path as connect, inside a directory the server allows",
                    )
                }),
            Backend::Gdb => {
                let address = connect.unwrap_or(DEFAULT_GDB);
                let address = address.strip_prefix("gdb:").unwrap_or(address);
                Ok(StartupTarget::Attach(format!("gdb:{address}")))
            }
            Backend::Kd | Backend::Kdnet | Backend::Memory => Err(Refusal::request(
                ErrorCode::NotAvailable,
                format!(
                    "backend {} is not available: {}",
                    self.name(),
                    self.missing()
                ),
                "for a VM's kernel use its GDB stub (QEMU -s: backend gdb, connect HOST:PORT), \
                 or open a crash dump (backend dump, connect PATH)",
            )),
        }
    }

    /// Why ntdbg cannot serve a backend it has no transport for.
    fn missing(self) -> &'static str {
        match self {
            Backend::Kd => "ntdbg has no KD transport (the KD serial protocol over a socket)",
            Backend::Kdnet => "ntdbg has no KDNET transport (KD over encrypted UDP)",
            Backend::Memory => {
                "ntdbg does not read a running VM's physical memory without a debug stub"
            }
            Backend::Gdb | Backend::Dump => "it is served",
        }
    }
}

/// `open` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenArgs {
    /// What to attach to: gdb (a GDB remote stub: gdbserver, QEMU -s, winedbg --gdb) or dump (a crash dump file); kd, kdnet and memory answer not_available.
    pub backend: Backend,
    /// host:port for gdb (default 127.0.0.1:1234); the .dmp path for dump (required, inside an allowed directory).
    pub connect: Option<String>,
    /// KDNET key (kdnet only, which is not available).
    pub key: Option<String>,
}

/// How `command` answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// The output with a `[target ...]` trailer.
    #[default]
    Text,
    /// `{ok, output, result, target, debug_output}` as the text.
    Json,
}

/// `command` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandArgs {
    /// A WinDbg command line, e.g. `!analyze -v`, `k`, `dt ntdll!_PEB @$peb`, `lm`, `u rip`, `g`, `break`; `;` separates commands; `help` lists them. Empty: wait for a stop.
    pub line: String,
    /// How long to wait for the target to stop, in ms (default 10000, max 300000; 0: default).
    #[schemars(range(min = 0, max = 300000))]
    pub timeout_ms: Option<u64>,
    /// text (default): output plus a `[target ...]` trailer. json: {ok, output, result, target, debug_output}.
    #[serde(default)]
    pub format: Format,
}

/// `command`'s wait: `timeout_ms`, or the default for absent and 0.
///
/// # Errors
/// More than [`MAX_TIMEOUT_MS`].
pub fn timeout_ms(value: Option<u64>) -> Result<u64, Refusal> {
    match value {
        None | Some(0) => Ok(DEFAULT_TIMEOUT_MS),
        Some(ms) if ms <= MAX_TIMEOUT_MS => Ok(ms),
        Some(ms) => Err(Refusal::params(
            ErrorCode::InvalidArguments,
            format!(
                "timeout_ms must be 0 (use default) or in range 1..={MAX_TIMEOUT_MS}, not {ms}"
            ),
            "send the command again to wait longer",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_defaults_and_bounds_follow_ntoseye() {
        assert_eq!(timeout_ms(None).ok(), Some(DEFAULT_TIMEOUT_MS));
        assert_eq!(timeout_ms(Some(0)).ok(), Some(DEFAULT_TIMEOUT_MS));
        assert_eq!(timeout_ms(Some(1)).ok(), Some(1));
        assert_eq!(timeout_ms(Some(MAX_TIMEOUT_MS)).ok(), Some(MAX_TIMEOUT_MS));
        let error = timeout_ms(Some(MAX_TIMEOUT_MS + 1)).unwrap_err();
        assert!(error.message.contains("1..=300000"), "{}", error.message);
    }

    #[test]
    fn served_backends_map_to_ntdbg_targets() {
        assert_eq!(
            Backend::Dump.target(Some(" /d/crash.dmp ")).ok(),
            Some(StartupTarget::Dump(PathBuf::from("/d/crash.dmp")))
        );
        assert_eq!(
            Backend::Gdb.target(None).ok(),
            Some(StartupTarget::Attach("gdb:127.0.0.1:1234".into()))
        );
        assert_eq!(
            Backend::Gdb.target(Some("gdb:host:9")).ok(),
            Some(StartupTarget::Attach("gdb:host:9".into()))
        );
        let missing = Backend::Dump.target(None).unwrap_err();
        assert_eq!(missing.kind, ErrorCode::InvalidArguments);
    }

    #[test]
    fn kernel_transports_are_not_available_with_a_hint() {
        for backend in [Backend::Kd, Backend::Kdnet, Backend::Memory] {
            let refused = backend.target(Some("x")).unwrap_err();
            assert_eq!(refused.kind, ErrorCode::NotAvailable);
            assert!(
                refused.message.contains(backend.name()),
                "{}",
                refused.message
            );
            assert!(refused.hint.contains("backend gdb"), "{}", refused.hint);
        }
    }

    #[test]
    fn backend_names_parse() {
        for b in Backend::ALL {
            assert_eq!(Backend::parse(b.name()), Ok(b));
        }
        assert!(Backend::parse("kvm")
            .unwrap_err()
            .contains("kd, kdnet, gdb"));
    }
}
