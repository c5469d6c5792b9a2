//! Drop-in tool profiles for the ntdbg MCP server: the tool names and parameters of other
//! WinDbg MCP servers, so their users switch to ntdbg by changing one line of their MCP
//! configuration (`ntdbg mcp --profile NAME`).
//!
//! A profile is a [`ToolSurface`] handed to the server ([`surface`]): its tools are methods
//! of `Host`, each translating its arguments into those of an ntdbg tool, making the same
//! call through [`Api`] the default tool makes, and shaping the answer the way that server's
//! users expect. Sessions, limits, security and the engine are the server's; the server knows
//! no profile.
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! use ntdbg_profiles::{surface, Profile};
//! let allowed = ntdbg_mcp::AllowedDirs::new(&["dumps".into()])?;
//! let server = ntdbg_mcp::NtdbgServer::new(allowed).with_surface(surface(Profile::McpWindbg, None));
//! ntdbg_mcp::run(server, ntdbg_mcp::Transport::Stdio)
//! # }
//! ```

mod chensiling;
mod mcp_windbg;
mod ntoseye;
mod windbg_mcp;

pub use ntoseye::startup_target as ntoseye_startup_target;
pub(crate) use windbg_mcp::Slot;
pub use windbg_mcp::{ImplicitSession, StartupTarget};

use ntdbg_mcp::dto::CommandStatus;
use ntdbg_mcp::{Api, BatchOutput, NtdbgServer, ToolSurface};
use rmcp::handler::server::router::prompt::PromptRouter;
use std::fmt::Write as _;
use std::sync::Arc;

/// Which tool set the server exposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// ntdbg's own tools (`open_dump`, `run_command`, …).
    #[default]
    Ntdbg,
    /// The tools of mcp-windbg: `open_cdb_dump`, `run_cdb_command`, `close_cdb_session`, …
    /// with `cdb-`/`kd-` session ids.
    McpWindbg,
    /// The tools of windbg-mcp: `wm_session`, `wm_run_cmd`, … on one session opened at
    /// startup ([`StartupTarget`]).
    WindbgMcp,
    /// The tools of ntoseye's MCP server: `command`, `open`, `close`, on one session at a time
    /// (opened by `open` or at startup).
    Ntoseye,
    /// The 20 intent tools of chensiling's Windbg-MCP: `windbg_context`, `windbg_analyze`,
    /// … answering its `ToolEnvelope`, on one session opened at startup.
    Chensiling,
}

impl Profile {
    /// Every profile, default first.
    pub const ALL: [Profile; 5] = [
        Profile::Ntdbg,
        Profile::McpWindbg,
        Profile::WindbgMcp,
        Profile::Ntoseye,
        Profile::Chensiling,
    ];

    /// The name `--profile` takes.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Ntdbg => "ntdbg",
            Profile::McpWindbg => "mcp-windbg",
            Profile::WindbgMcp => "windbg-mcp",
            Profile::Ntoseye => "ntoseye",
            Profile::Chensiling => "chensiling",
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = String;

    fn from_str(name: &str) -> Result<Profile, String> {
        Profile::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
                format!("unknown profile {name:?}: use one of {}", names.join(", "))
            })
    }
}

/// What the profiles' tools are methods of: the server, and the one session of the
/// single-session profiles.
#[derive(Debug, Clone)]
pub(crate) struct Host {
    api: Api,
    implicit: Arc<ImplicitSession>,
}

impl Host {
    /// The server.
    pub(crate) fn api(&self) -> &Api {
        &self.api
    }

    /// The one session of the windbg-mcp, ntoseye and chensiling profiles.
    pub(crate) fn implicit(&self) -> &ImplicitSession {
        &self.implicit
    }
}

/// The tools and prompts of `profile`, whose single-session tools open `startup` when the
/// server starts; `None` for ntdbg's own tools.
pub fn surface(
    profile: Profile,
    startup: Option<StartupTarget>,
) -> Option<ToolSurface<NtdbgServer>> {
    let implicit = Arc::new(ImplicitSession::default());
    if let Some(target) = startup {
        implicit.set_startup(target);
    }
    let host = move |api: &Api| Host {
        api: api.clone(),
        implicit: implicit.clone(),
    };
    let none = PromptRouter::new;
    let surface = match profile {
        Profile::Ntdbg => return None,
        Profile::McpWindbg => ToolSurface::hosted(
            host.clone(),
            Host::mcp_windbg_tools() + Host::mcp_windbg_legacy_tools(),
            Host::mcp_windbg_prompts(),
        )
        .with_workflow(mcp_windbg::WORKFLOW)
        .with_kinds(mcp_windbg::LIVE_ONLY, mcp_windbg::DUMP_ONLY),
        Profile::WindbgMcp => ToolSurface::hosted(host.clone(), Host::windbg_mcp_tools(), none())
            .with_workflow(windbg_mcp::WORKFLOW)
            .with_kinds(&["wm_break_in", "wm_wait_event"], &[]),
        Profile::Ntoseye => ToolSurface::hosted(host.clone(), Host::ntoseye_tools(), none())
            .with_workflow(ntoseye::WORKFLOW),
        Profile::Chensiling => ToolSurface::hosted(host.clone(), Host::chensiling_tools(), none())
            .with_workflow(chensiling::WORKFLOW)
            .with_kinds(
                &["windbg_write_memory", "windbg_breakpoint", "windbg_control"],
                &[],
            ),
    };
    Some(surface.with_start(move |api| {
        let host = host(api);
        async move { host.open_startup_target().await }
    }))
}

/// Most bytes of command output one profile answer carries (the profiles have no tool to
/// page the rest).
const MAX_TEXT: usize = 1 << 20;

/// The whole text of a batch as a debugger console shows it: each command after the cdb
/// prompt (`0:00N>`, N the thread it ran on) or the kd one, then its whole output (from the
/// runner, never a preview) or its error; at most [`MAX_TEXT`] bytes.
fn console_text(batch: &BatchOutput, kernel: bool) -> String {
    let mut text = String::new();
    let mut thread = 0;
    for (r, full) in batch.rendered.value.results.iter().zip(&batch.full) {
        thread = full.thread.unwrap_or(thread);
        if kernel {
            let _ = writeln!(text, "0: kd> {}", r.command);
        } else {
            let _ = writeln!(text, "0:{thread:03}> {}", r.command);
        }
        let body = match r.status {
            CommandStatus::NotExecuted if full.thread.is_none() => {
                "(not executed: an earlier command failed or timed out)"
            }
            _ => full.text.as_str(),
        };
        if !push_capped(&mut text, body) {
            break;
        }
    }
    text
}

/// Appends `body` to `text`, ending it with a newline; past [`MAX_TEXT`] bytes cuts `text`
/// there with a note and answers false (append nothing more).
fn push_capped(text: &mut String, body: &str) -> bool {
    text.push_str(body);
    if !body.is_empty() && !body.ends_with('\n') {
        text.push('\n');
    }
    if text.len() <= MAX_TEXT {
        return true;
    }
    let cut = ntdbg_mcp::floor_char(text, MAX_TEXT);
    text.truncate(cut);
    let _ = writeln!(
        text,
        "\n[output cut at {MAX_TEXT} bytes: run narrower commands, or write it to a file]"
    );
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use ntdbg_mcp::{AllowedDirs, AttachPolicy, ToolSet};

    fn names(profile: Profile) -> Vec<String> {
        let allowed = AllowedDirs::new(&[std::env::temp_dir()]).expect("temp dir");
        let mut names: Vec<String> = NtdbgServer::new(allowed)
            .with_surface(surface(profile, None))
            .tools()
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn profile_names_round_trip() {
        for p in Profile::ALL {
            assert_eq!(p.name().parse::<Profile>(), Ok(p));
        }
        let error = "windbg".parse::<Profile>().unwrap_err();
        assert!(error.contains("mcp-windbg, windbg-mcp, ntoseye"), "{error}");
    }

    #[test]
    fn each_profile_serves_its_own_tool_names() {
        assert_eq!(
            names(Profile::McpWindbg),
            [
                "close_cdb_session",
                "close_kd_session",
                "close_windbg_dump",
                "close_windbg_remote",
                "list_dumps",
                "list_windbg_dumps",
                "open_cdb_dump",
                "open_cdb_remote",
                "open_kd_dump",
                "open_kd_session",
                "open_windbg_dump",
                "open_windbg_remote",
                "run_cdb_command",
                "run_kd_command",
                "run_windbg_cmd",
                "send_ctrl_break",
                "wait_for_break"
            ]
        );
        assert_eq!(
            names(Profile::WindbgMcp),
            [
                "wm_analyze_crash",
                "wm_break_in",
                "wm_detach",
                "wm_run_cmd",
                "wm_session",
                "wm_shutdown",
                "wm_wait_event"
            ]
        );
        assert_eq!(names(Profile::Ntoseye), ["close", "command", "open"]);
        assert_eq!(
            names(Profile::Chensiling),
            [
                "windbg_analyze",
                "windbg_backtrace",
                "windbg_blackbox",
                "windbg_breakpoint",
                "windbg_context",
                "windbg_control",
                "windbg_disassemble",
                "windbg_evaluate",
                "windbg_exec",
                "windbg_image_verify",
                "windbg_lookup",
                "windbg_memory_mapping",
                "windbg_module",
                "windbg_output",
                "windbg_pool",
                "windbg_read_memory",
                "windbg_session",
                "windbg_sympath",
                "windbg_thread",
                "windbg_write_memory"
            ]
        );
        assert!(names(Profile::Ntdbg).contains(&"open_dump".to_string()));
    }

    fn names_in(server: NtdbgServer) -> Vec<String> {
        let mut names: Vec<String> = server.tools().iter().map(|t| t.name.to_string()).collect();
        names.sort();
        names
    }

    fn server() -> NtdbgServer {
        NtdbgServer::new(AllowedDirs::new(&[std::env::temp_dir()]).expect("temp dir"))
    }

    #[test]
    fn each_tool_set_lists_its_tools() {
        let dumps = names_in(server().with_tools(Some(ToolSet::Dumps)));
        assert_eq!(
            dumps,
            [
                "analyze_crash",
                "close_session",
                "list_dumps",
                "list_sessions",
                "open_dump",
                "read_output",
                "run_command",
                "triage_dumps"
            ]
        );
        let live = names_in(server().with_tools(Some(ToolSet::Live)));
        assert_eq!(
            live,
            [
                "analyze_crash",
                "attach",
                "break_in",
                "close_session",
                "list_sessions",
                "read_output",
                "run_command",
                "wait_for_event"
            ]
        );
        assert_eq!(names_in(server()), names(Profile::Ntdbg));
        assert_eq!(names(Profile::Ntdbg).len(), 11);
        // The set survives a later choice of profile, and applies to its tools.
        let windbg = names_in(
            server()
                .with_tools(Some(ToolSet::Dumps))
                .with_surface(surface(Profile::McpWindbg, None)),
        );
        assert!(windbg.contains(&"open_cdb_dump".to_string()));
        assert!(
            !windbg.contains(&"send_ctrl_break".to_string()),
            "{windbg:?}"
        );
    }

    #[test]
    fn without_a_chosen_set_live_tools_are_listed_only_where_live_targets_are_allowed() {
        let closed = server().with_attach_policy(AttachPolicy::none());
        assert_eq!(closed.tool_set(), ToolSet::Dumps);
        assert!(!names_in(closed).contains(&"attach".to_string()));
        let chosen = server()
            .with_attach_policy(AttachPolicy::none())
            .with_tools(Some(ToolSet::All));
        assert!(names_in(chosen).contains(&"attach".to_string()));
        assert!(names_in(server()).contains(&"attach".to_string()));
    }

    #[test]
    fn no_set_leaves_out_a_tool_of_every_target() {
        for p in Profile::ALL {
            let all = names_in(server().with_surface(surface(p, None)));
            for set in [ToolSet::Dumps, ToolSet::Live] {
                let listed = names_in(
                    server()
                        .with_surface(surface(p, None))
                        .with_tools(Some(set)),
                );
                for name in ["run_command", "analyze_crash", "read_output", "command"] {
                    let name = name.to_string();
                    assert_eq!(all.contains(&name), listed.contains(&name), "{name}");
                }
            }
        }
    }

    #[test]
    fn every_profile_stays_within_the_tools_list_budget() {
        for p in Profile::ALL {
            let allowed = AllowedDirs::new(&[std::env::temp_dir()]).expect("temp dir");
            let tools = NtdbgServer::new(allowed)
                .with_surface(surface(p, None))
                .tools();
            let size = serde_json::to_string(&tools).expect("json").len();
            assert!(
                size < ntdbg_mcp::limits::TOOLS_LIST_BUDGET,
                "{}: {size}",
                p.name()
            );
        }
    }
}
