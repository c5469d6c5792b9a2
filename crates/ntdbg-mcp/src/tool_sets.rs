//! Tool sets (`ntdbg mcp --tools dumps|live|all`): a server that only ever sees dump files lists
//! only the tools (and prompts) that work on dumps, so a model does not pay for, or reach for,
//! `attach`, `break_in` and `wait_for_event`; a server for live targets leaves out the dump
//! tools. Tools that work on both (`run_command`, `analyze_crash`, …) are in every set. The
//! default is all of them where live targets are allowed, else the dump set.
//!
//! A tool left out is not routed either: a call to it answers "tool not found", as for any
//! name the server does not have.

use crate::profiles::Profile;

/// Which tools a server lists and answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSet {
    /// Tools for dump files (and those that work on every target).
    Dumps,
    /// Tools for live targets (and those that work on every target).
    Live,
    /// Every tool of the profile.
    All,
}

impl ToolSet {
    /// Every set.
    pub const ALL: [ToolSet; 3] = [ToolSet::Dumps, ToolSet::Live, ToolSet::All];

    /// The name `--tools` takes.
    pub fn name(self) -> &'static str {
        match self {
            ToolSet::Dumps => "dumps",
            ToolSet::Live => "live",
            ToolSet::All => "all",
        }
    }

    /// The set a server lists when none was chosen: every tool where live targets are allowed,
    /// else the dump tools.
    pub fn default_for(live_targets_allowed: bool) -> ToolSet {
        if live_targets_allowed {
            ToolSet::All
        } else {
            ToolSet::Dumps
        }
    }

    /// The tool and prompt names of `profile` this set leaves out.
    pub(crate) fn left_out(self, profile: Profile) -> &'static [&'static str] {
        match self {
            ToolSet::All => &[],
            ToolSet::Dumps => live_only(profile),
            ToolSet::Live => dump_only(profile),
        }
    }
}

impl std::str::FromStr for ToolSet {
    type Err = String;

    fn from_str(name: &str) -> Result<ToolSet, String> {
        ToolSet::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| format!("unknown tool set {name:?}: use dumps, live or all"))
    }
}

/// The tools and prompts of `profile` that only a live target can use.
fn live_only(profile: Profile) -> &'static [&'static str] {
    match profile {
        Profile::Ntdbg => &["attach", "break_in", "wait_for_event"],
        Profile::McpWindbg => &[
            "open_cdb_remote",
            "open_kd_session",
            "send_ctrl_break",
            "wait_for_break",
            "remote-triage",
            "open_windbg_remote",
            "close_windbg_remote",
        ],
        Profile::WindbgMcp => &["wm_break_in", "wm_wait_event"],
        Profile::Ntoseye => &[],
        Profile::Chensiling => &["windbg_write_memory", "windbg_breakpoint", "windbg_control"],
    }
}

/// The tools and prompts of `profile` that only a dump file can use.
fn dump_only(profile: Profile) -> &'static [&'static str] {
    match profile {
        Profile::Ntdbg => &[
            "list_dumps",
            "triage_dumps",
            "open_dump",
            "query_crashes",
            "triage-dump",
            "triage-kernel-dump",
        ],
        Profile::McpWindbg => &[
            "list_dumps",
            "open_cdb_dump",
            "open_kd_dump",
            "dump-triage",
            "kernel-triage",
            "open_windbg_dump",
            "close_windbg_dump",
            "list_windbg_dumps",
        ],
        Profile::WindbgMcp | Profile::Ntoseye | Profile::Chensiling => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for set in ToolSet::ALL {
            assert_eq!(set.name().parse::<ToolSet>(), Ok(set));
        }
        assert!("dump".parse::<ToolSet>().is_err());
    }

    #[test]
    fn the_default_lists_live_tools_only_where_live_targets_are_allowed() {
        assert_eq!(ToolSet::default_for(true), ToolSet::All);
        assert_eq!(ToolSet::default_for(false), ToolSet::Dumps);
    }

    #[test]
    fn no_set_leaves_out_a_tool_of_every_target() {
        for profile in Profile::ALL {
            for name in ["run_command", "analyze_crash", "read_output", "command"] {
                assert!(!live_only(profile).contains(&name), "{name}");
                assert!(!dump_only(profile).contains(&name), "{name}");
            }
        }
    }
}
