//! Session ids of the mcp-windbg profile: ntdbg's own id behind a `cdb-` (user mode) or `kd-`
//! (kernel) prefix, and the errors that name the right tool when the kinds do not match.

use ntdbg_engine::ErrorCode;
use ntdbg_mcp::Api;
use ntdbg_mcp::SessionSlot;
use ntdbg_mcp::ToolError;
use std::sync::Arc;

/// User mode (cdb) or kernel (kd): the two families of mcp-windbg tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// User mode: `cdb-` ids.
    Cdb,
    /// Kernel: `kd-` ids.
    Kd,
}

impl Mode {
    /// The mode of an ntdbg session kind (`user`, `kernel-…`).
    pub(super) fn of_kind(kind: &str) -> Mode {
        if kind.starts_with("kernel") {
            Mode::Kd
        } else {
            Mode::Cdb
        }
    }

    /// The id prefix.
    pub(super) fn prefix(self) -> &'static str {
        match self {
            Mode::Cdb => "cdb-",
            Mode::Kd => "kd-",
        }
    }

    /// How errors name the kind.
    pub(super) fn noun(self) -> &'static str {
        match self {
            Mode::Cdb => "user-mode (cdb)",
            Mode::Kd => "kernel (kd)",
        }
    }

    /// The tool that opens dumps of this kind.
    pub(super) fn open_tool(self) -> &'static str {
        match self {
            Mode::Cdb => "open_cdb_dump",
            Mode::Kd => "open_kd_dump",
        }
    }

    /// The tool that runs commands on this kind.
    pub(super) fn run_tool(self) -> &'static str {
        match self {
            Mode::Cdb => "run_cdb_command",
            Mode::Kd => "run_kd_command",
        }
    }

    /// The tool that closes sessions of this kind.
    pub(super) fn close_tool(self) -> &'static str {
        match self {
            Mode::Cdb => "close_cdb_session",
            Mode::Kd => "close_kd_session",
        }
    }
}

/// The profile id of ntdbg session `raw`.
pub(super) fn profile_id(mode: Mode, raw: &str) -> String {
    format!("{}{raw}", mode.prefix())
}

/// The session behind a `cdb-…` or `kd-…` id, of either kind, with the kind its prefix names.
pub(super) fn lookup(api: &Api, id: &str) -> Result<(Mode, Arc<SessionSlot>), ToolError> {
    let (mode, raw) = split_id(id)?;
    let slot = api.session(raw).map_err(|e| profile_ids(e, id, api))?;
    Ok((mode, slot))
}

/// The ntdbg session behind a profile id, checked to be of `expected` kind; `tool` is the
/// tool asking, for the error.
pub(super) fn resolve(
    api: &Api,
    id: &str,
    expected: Mode,
    tool: &str,
) -> Result<String, ToolError> {
    let (mode, slot) = lookup(api, id)?;
    let actual = Mode::of_kind(&slot.kind);
    if mode != expected || actual != expected {
        return Err(ToolError::new(
            ErrorCode::WrongSessionKind,
            format!(
                "{} is a {} session: {tool} takes {} session ids ({}…)",
                id.trim(),
                actual.noun(),
                expected.noun(),
                expected.prefix()
            ),
        )
        .with_hint(format!(
            "use {} and {} for this session",
            actual.run_tool(),
            actual.close_tool()
        )));
    }
    Ok(slot.id.clone())
}

/// The kind and ntdbg id of a `cdb-…` or `kd-…` id.
pub(super) fn split_id(id: &str) -> Result<(Mode, &str), ToolError> {
    let id = id.trim();
    [Mode::Cdb, Mode::Kd]
        .into_iter()
        .find_map(|m| id.strip_prefix(m.prefix()).map(|raw| (m, raw)))
        .ok_or_else(|| {
            ToolError::new(
                ErrorCode::UnknownSession,
                format!("{id:?} is not a session id: ids start with cdb- or kd-"),
            )
            .with_hint("pass the session_id from the first line of open_cdb_dump or open_kd_dump")
        })
}

/// An `unknown_session` error for profile id `id`, whose hint lists the open sessions by their
/// profile ids.
pub(super) fn profile_ids(mut error: ToolError, id: &str, api: &Api) -> ToolError {
    if error.code == ErrorCode::UnknownSession {
        let open: Vec<String> = api
            .sessions()
            .iter()
            .map(|s| profile_id(Mode::of_kind(&s.kind), &s.id))
            .collect();
        error.message = format!(
            "no open session with id {:?} (it was never opened, or it was closed)",
            id.trim()
        );
        error.hint = Some(if open.is_empty() {
            "no sessions are open: call open_cdb_dump or open_kd_dump first".into()
        } else {
            format!("open sessions: {}", open.join(", "))
        });
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_kind() {
        assert_eq!(profile_id(Mode::Kd, "s1-ab"), "kd-s1-ab");
        assert_eq!(split_id(" cdb-s2-ab ").unwrap(), (Mode::Cdb, "s2-ab"));
        assert_eq!(split_id("kd-s3-ab").unwrap(), (Mode::Kd, "s3-ab"));
        assert_eq!(split_id("s3-ab").unwrap_err().code, "unknown_session");
        assert_eq!(Mode::of_kind("kernel-triage"), Mode::Kd);
        assert_eq!(Mode::of_kind("user"), Mode::Cdb);
    }
}
