//! Names of code outside every module (methods a runtime compiled at run time), from the
//! text files runtimes and crash reporters write beside a dump:
//!
//! - Unity's `error.log`: the crashed thread's mixed-mode stack, one frame per line,
//!   `0x0000021E3438B78A (UnityEngine.CoreModule) UnityEngine.Mesh.Internal_Create()` (the
//!   address is the frame's instruction: the return address for callers);
//! - perf maps (`perf-<pid>.map`, written by .NET, Mono and Node.js when asked): one
//!   `START SIZE name` line (hexadecimal) per compiled method.
//!
//! Parsing only: which file belongs to which dump is the caller's to check.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A name for code outside every module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitName {
    /// What the runtime says holds the code (Unity: the managed assembly), if anything.
    pub module: Option<String>,
    /// The method.
    pub function: String,
}

/// One frame of a Unity `error.log` stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnityFrame {
    /// The frame's instruction address.
    pub address: u64,
    /// The module or assembly column (`UnityPlayer`, `Assembly-CSharp`, `<unknown>`).
    pub module: String,
    /// The function column (`(function-name not available)` when Unity had none).
    pub function: String,
}

/// The crashed thread's stack from a Unity `error.log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnityStack {
    /// The thread id Unity gives (`Stack Trace of Crashed Thread 9636:`).
    pub thread_id: u32,
    /// Its frames, innermost first.
    pub frames: Vec<UnityFrame>,
}

/// The crashed thread's stack of a Unity `error.log`, when the text has one.
pub fn parse_unity_error_log(text: &str) -> Option<UnityStack> {
    const HEADER: &str = "Stack Trace of Crashed Thread ";
    let mut lines = text.lines();
    let thread_id = lines.find_map(|l| {
        l.trim()
            .strip_prefix(HEADER)?
            .trim_end_matches(':')
            .trim()
            .parse()
            .ok()
    })?;
    let mut frames = Vec::new();
    for line in lines {
        let line = line.trim();
        // Unity interleaves dbghelp's complaints (`ERROR: SymGetSymFromAddr64, …`).
        if line.starts_with("ERROR:") {
            continue;
        }
        let Some(frame) = unity_frame(line) else {
            break;
        };
        frames.push(frame);
    }
    (!frames.is_empty()).then_some(UnityStack { thread_id, frames })
}

/// `0x00007FF9F4D221FD (UnityPlayer) UnityMain`.
fn unity_frame(line: &str) -> Option<UnityFrame> {
    let (address, rest) = line.strip_prefix("0x")?.split_once(' ')?;
    let address = u64::from_str_radix(address, 16).ok()?;
    let rest = rest.trim_start().strip_prefix('(')?;
    // The module column ends at its matching parenthesis (it may hold some: `(<unknown>)`).
    let mut depth = 1;
    let close = rest.find(|c| {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        depth == 0
    })?;
    let module = rest[..close]
        .trim_matches(|c| c == '(' || c == ')')
        .to_string();
    let function = rest[close + 1..].trim().to_string();
    Some(UnityFrame {
        address,
        module,
        function,
    })
}

/// The entries of a perf map: `(start, size, name)`.
pub fn parse_perf_map(text: &str) -> Vec<(u64, u64, String)> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.trim().splitn(3, ' ');
            let start = u64::from_str_radix(parts.next()?.trim_start_matches("0x"), 16).ok()?;
            let size = u64::from_str_radix(parts.next()?.trim_start_matches("0x"), 16).ok()?;
            let name = parts.next()?.trim();
            (size > 0 && !name.is_empty()).then(|| (start, size, name.to_string()))
        })
        .collect()
}

/// Names for code outside every module, from one file.
#[derive(Debug, Clone, Default)]
pub struct JitNames {
    source: PathBuf,
    /// What kind of file it is (`Unity's crash log`, `a perf map`).
    kind: &'static str,
    /// Names of exact instruction addresses (a stack's frames).
    points: HashMap<u64, JitName>,
    /// Names of code ranges `(start, end, name)`, sorted by start.
    ranges: Vec<(u64, u64, JitName)>,
}

impl JitNames {
    /// Names read from `source`, a file of `kind` (`Unity's crash log`): exact instruction
    /// addresses and code ranges.
    pub fn new(
        source: PathBuf,
        kind: &'static str,
        points: impl IntoIterator<Item = (u64, JitName)>,
        ranges: impl IntoIterator<Item = (u64, u64, JitName)>,
    ) -> JitNames {
        let mut ranges: Vec<_> = ranges.into_iter().filter(|r| r.0 < r.1).collect();
        ranges.sort_by_key(|r| r.0);
        JitNames {
            source,
            kind,
            points: points.into_iter().collect(),
            ranges,
        }
    }

    /// The file the names came from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// What kind of file it is (`Unity's crash log`, `a perf map`).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Whether there is no name at all.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty() && self.ranges.is_empty()
    }

    /// The name of the code at `addr`: a frame listed at exactly that address, else a range
    /// holding it.
    pub fn at(&self, addr: u64) -> Option<&JitName> {
        if let Some(name) = self.points.get(&addr) {
            return Some(name);
        }
        let after = self.ranges.partition_point(|r| r.0 <= addr);
        self.ranges[..after]
            .iter()
            .rev()
            .find(|r| addr < r.1)
            .map(|r| &r.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "Read from location 0000000000000000 caused an access violation.\r
\r
Stack Trace of Crashed Thread 9636:\r
ERROR: SymGetSymFromAddr64, GetLastError: 'The specified module could not be found.' (Address: 0000253400000019)\r
0x0000253400000019 ((<unknown>)) (function-name not available)\r
0x000001E010FA5BE9 (mscorlib) System.String.Concat()\r
0x00007FF9F4D221FD (UnityPlayer) Foo(int) const\r
0x00007FFA4871BFB0 (mono-2.0-bdwgc) mono_get_runtime_build_info\r
\r
Stacks for Running Threads:\r
";

    #[test]
    fn unity_crashed_thread() {
        let stack = parse_unity_error_log(LOG).unwrap();
        assert_eq!(stack.thread_id, 9636);
        assert_eq!(
            stack.frames,
            [
                UnityFrame {
                    address: 0x2534_0000_0019,
                    module: "<unknown>".into(),
                    function: "(function-name not available)".into(),
                },
                UnityFrame {
                    address: 0x1e0_10fa_5be9,
                    module: "mscorlib".into(),
                    function: "System.String.Concat()".into(),
                },
                UnityFrame {
                    address: 0x7ff9_f4d2_21fd,
                    module: "UnityPlayer".into(),
                    function: "Foo(int) const".into(),
                },
                UnityFrame {
                    address: 0x7ffa_4871_bfb0,
                    module: "mono-2.0-bdwgc".into(),
                    function: "mono_get_runtime_build_info".into(),
                },
            ]
        );
        assert_eq!(parse_unity_error_log("no stack here"), None);
    }

    #[test]
    fn perf_map_ranges() {
        let entries = parse_perf_map("7F1A2B3C4000 40 [JIT] Program::Main()\nbad line\n10 0 x\n");
        assert_eq!(
            entries,
            [(0x7f1a_2b3c_4000, 0x40, "[JIT] Program::Main()".to_string())]
        );
        let name = |f: &str| JitName {
            module: None,
            function: f.into(),
        };
        let names = JitNames::new(
            PathBuf::from("perf-1.map"),
            "a perf map",
            [(0x500, name("point"))],
            [(0x100, 0x140, name("a")), (0x140, 0x200, name("b"))],
        );
        assert_eq!(names.at(0x13f).unwrap().function, "a");
        assert_eq!(names.at(0x140).unwrap().function, "b");
        assert_eq!(names.at(0x500).unwrap().function, "point");
        assert!(names.at(0x200).is_none());
    }
}
