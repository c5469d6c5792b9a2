//! Tool sets (`ntdbg mcp --tools dumps|live|all`): a server that only ever sees dump files lists
//! only the tools (and prompts) that work on dumps, so a model does not pay for, or reach for,
//! `attach`, `break_in` and `wait_for_event`; a server for live targets leaves out the dump
//! tools. Tools that work on both (`run_command`, `analyze_crash`, …) are in every set. The
//! default is all of them where live targets are allowed, else the dump set.
//!
//! A tool left out is not routed either: a call to it answers "tool not found", as for any
//! name the server does not have.

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

    /// The names among `kinds`' tools and prompts this set leaves out.
    pub(crate) fn left_out(self, kinds: ToolKinds) -> &'static [&'static str] {
        match self {
            ToolSet::All => &[],
            ToolSet::Dumps => kinds.live_only,
            ToolSet::Live => kinds.dump_only,
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

/// Which of a server's tools and prompts work on one kind of target only.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ToolKinds {
    /// The names only a live target can use.
    pub(crate) live_only: &'static [&'static str],
    /// The names only a dump file can use.
    pub(crate) dump_only: &'static [&'static str],
}

impl ToolKinds {
    /// ntdbg's own tools and prompts.
    pub(crate) const NTDBG: ToolKinds = ToolKinds {
        live_only: &["attach", "break_in", "wait_for_event"],
        dump_only: &[
            "list_dumps",
            "triage_dumps",
            "open_dump",
            "query_crashes",
            "triage-dump",
            "triage-kernel-dump",
        ],
    };
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
}
