//! The banner a terminal session starts with, in the shape of WinDbg's: for a dump, the file,
//! what kind of dump it is, the target's version lines (`vertarget`), the bugcheck of a kernel
//! crash dump (`.bugcheck`) or whether a dump holds an exception of interest, and the last
//! event (`.lastevent`); for a live target, what was
//! attached and why it is stopped. Every fact comes from the session or a command's output.

use ntdbg_engine::live::RunState;
use ntdbg_engine::Session;
use ntdbg_targets::TargetKind;

/// The banner text for `session`, ending with a blank line.
pub fn banner(session: &mut Session) -> String {
    let mut text = format!(
        "ntdbg {}: WinDbg commands (`help` lists them, Tab completes, `q` quits)\n\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(live) = session.live().cloned() {
        let state = match live.state() {
            RunState::Halted(h) if !h.event_text.is_empty() => format!("stopped: {}", h.event_text),
            state => state.name().to_string(),
        };
        text.push_str(&format!(
            "Attached to {} ({state})\n\n",
            session.target().origin()
        ));
        return text;
    }
    let kind = session.target().kind();
    text.push_str(&format!(
        "Loading Dump File [{}]\n{}\n\n",
        session.target().origin(),
        kind_line(kind)
    ));
    if let Ok(version) = ntdbg_commands::run_command(session, "vertarget") {
        text.push_str(&version.text);
    }
    if session.target().bugcheck().is_some() {
        if let Ok(bugcheck) = ntdbg_commands::run_command(session, ".bugcheck") {
            text.push_str(&bugcheck.text);
        }
    } else if session.target().event().is_some() {
        text.push_str("This dump file has an exception of interest stored in it.\n");
        text.push_str("Use .ecxr to switch to the stored exception's context.\n");
    }
    if let Ok(event) = ntdbg_commands::run_command(session, ".lastevent") {
        if let Some(first) = event.text.lines().next() {
            text.push_str(first);
            text.push('\n');
        }
    }
    text.push('\n');
    text
}

/// WinDbg's dump-kind line: the kind of dump and what it can show.
fn kind_line(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::UserDump => "User Mini Dump File: the memory the dump captured is available",
        TargetKind::KernelSmall => "Mini Kernel Dump File: only registers and stacks are available",
        TargetKind::KernelTriage => {
            "Kernel Triage Dump File: registers, stacks and selected kernel memory are available"
        }
        TargetKind::Kernel => "Kernel Summary Dump File: only kernel address space is available",
        TargetKind::KernelFull => "Kernel Complete Dump File: full address space is available",
        TargetKind::KernelBitmap => {
            "Kernel Bitmap Dump File: kernel address space is available, user address space may not be"
        }
        TargetKind::Live => "Live target",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &std::path::Path) -> Session {
        let session = Session::open_dump(path, None).expect("the dump opens");
        session.symbols().set_offline(true);
        session
    }

    #[test]
    fn user_dump_banner_in_windbg_order() {
        let mut session = open(&ntdbg_testutil::sample("crashy-x64-null.dmp"));
        let text = banner(&mut session);
        let order = [
            "Loading Dump File [",
            "User Mini Dump File:",
            "Windows 10 Version 18362",
            "This dump file has an exception of interest stored in it.",
            "Last event: 20.24: Access violation - code c0000005",
        ];
        let mut from = 0;
        for line in order {
            let at = text[from..]
                .find(line)
                .unwrap_or_else(|| panic!("{line} after {from}:\n{text}"));
            from += at + line.len();
        }
        assert!(!text.contains("Bugcheck"), "{text}");
    }

    #[test]
    fn kernel_dump_banner_shows_the_bugcheck() {
        if !ntdbg_testutil::testdata_available() {
            return;
        }
        let mut session = open(&ntdbg_testutil::testdata(
            "rizin-testbins/dmp/triage_x64.dmp",
        ));
        let text = banner(&mut session);
        assert!(text.contains("Mini Kernel Dump File:"), "{text}");
        assert!(text.contains("Bugcheck code 1000007E"), "{text}");
        assert!(!text.contains("exception of interest"), "{text}");
    }
}
