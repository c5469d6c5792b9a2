//! The target text of a Windows process: `pid:N` or `exe:PATH ARGS…`.

use crate::Win32Error;

/// A Windows process to debug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// `pid:N`: attach to a running process (decimal, or hex with `0x`).
    Pid(u32),
    /// `exe:PATH ARGS…`: start the program under the debugger.
    Exe {
        /// The program. Quote it (`exe:"C:\Program Files\a.exe" x`) when it has spaces and
        /// does not end in `.exe`.
        path: String,
        /// The arguments, exactly as written after the path.
        args: String,
    },
}

impl TargetSpec {
    /// Parses `pid:N` or `exe:PATH ARGS…`; `Ok(None)` for other target kinds (`gdb:…`).
    pub fn parse(text: &str) -> Result<Option<TargetSpec>, Win32Error> {
        let text = text.trim();
        if let Some(pid) = strip_prefix_ci(text, "pid:") {
            return parse_pid(pid.trim()).map(Some);
        }
        if let Some(rest) = strip_prefix_ci(text, "exe:") {
            return parse_exe(rest.trim()).map(Some);
        }
        Ok(None)
    }

    /// The target as the session's origin shows it: `pid:N` or `exe:PATH`.
    pub fn origin(&self) -> String {
        match self {
            TargetSpec::Pid(pid) => format!("pid:{pid}"),
            TargetSpec::Exe { path, .. } => format!("exe:{path}"),
        }
    }

    /// The command line given to `CreateProcessW`: the quoted path, then the arguments.
    pub fn command_line(&self) -> Option<String> {
        match self {
            TargetSpec::Pid(_) => None,
            TargetSpec::Exe { path, args } if args.is_empty() => Some(format!("\"{path}\"")),
            TargetSpec::Exe { path, args } => Some(format!("\"{path}\" {args}")),
        }
    }

    /// The folder of the program (`exe:` only): a helpful default symbol path.
    pub fn program_folder(&self) -> Option<&str> {
        match self {
            TargetSpec::Pid(_) => None,
            TargetSpec::Exe { path, .. } => {
                let cut = path.rfind(['\\', '/'])?;
                Some(&path[..cut.max(1)])
            }
        }
    }
}

fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

fn parse_pid(text: &str) -> Result<TargetSpec, Win32Error> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse::<u32>(),
    };
    match parsed {
        Ok(pid) if pid != 0 => Ok(TargetSpec::Pid(pid)),
        _ => Err(Win32Error::BadSpec(format!(
            "{text:?} is not a process id: write pid:N (decimal, or hex with 0x)"
        ))),
    }
}

fn parse_exe(text: &str) -> Result<TargetSpec, Win32Error> {
    let bad = |why: &str| Win32Error::BadSpec(format!("exe:{text}: {why}"));
    if text.contains('\0') {
        return Err(bad("the command line contains a NUL character"));
    }
    let (path, args) = if let Some(quoted) = text.strip_prefix('"') {
        let end = quoted
            .find('"')
            .ok_or_else(|| bad("the quoted path has no closing quote"))?;
        (&quoted[..end], &quoted[end + 1..])
    } else {
        // Unquoted: up to the first `.exe` followed by a space (so paths with spaces work),
        // else up to the first space.
        let lower = text.to_ascii_lowercase();
        let end = lower
            .match_indices(".exe")
            .map(|(i, _)| i + 4)
            .find(|&e| text[e..].is_empty() || text[e..].starts_with(char::is_whitespace))
            .or_else(|| text.find(char::is_whitespace))
            .unwrap_or(text.len());
        (&text[..end], &text[end..])
    };
    if path.trim().is_empty() {
        return Err(bad("no program path: write exe:PATH ARGS…"));
    }
    Ok(TargetSpec::Exe {
        path: path.to_string(),
        args: args.trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exe(path: &str, args: &str) -> TargetSpec {
        TargetSpec::Exe {
            path: path.into(),
            args: args.into(),
        }
    }

    #[test]
    fn pids() {
        assert_eq!(
            TargetSpec::parse("pid:1234").unwrap(),
            Some(TargetSpec::Pid(1234))
        );
        assert_eq!(
            TargetSpec::parse(" PID:0x10 ").unwrap(),
            Some(TargetSpec::Pid(16))
        );
        for bad in ["pid:", "pid:0", "pid:-1", "pid:abc", "pid:99999999999"] {
            let e = TargetSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains("not a process id"), "{bad}: {e}");
        }
        assert_eq!(TargetSpec::parse("gdb:127.0.0.1:1").unwrap(), None);
    }

    #[test]
    fn programs_and_arguments() {
        let p = |t: &str| TargetSpec::parse(t).unwrap().unwrap();
        assert_eq!(
            p("exe:C:\\t\\live.exe loop"),
            exe("C:\\t\\live.exe", "loop")
        );
        assert_eq!(p("exe:C:\\t\\live.exe"), exe("C:\\t\\live.exe", ""));
        assert_eq!(
            p("exe:C:\\Program Files\\My App\\a.exe  x \"y z\""),
            exe("C:\\Program Files\\My App\\a.exe", "x \"y z\"")
        );
        assert_eq!(
            p("exe:\"C:\\My Tools\\run\" -v"),
            exe("C:\\My Tools\\run", "-v")
        );
        assert_eq!(p("EXE:notepad a b"), exe("notepad", "a b"));
        assert_eq!(
            p("exe:\"C:\\a b\\x.exe\" 1").command_line().unwrap(),
            "\"C:\\a b\\x.exe\" 1"
        );
        assert_eq!(
            p("exe:C:\\t\\live.exe").command_line().unwrap(),
            "\"C:\\t\\live.exe\""
        );
        assert_eq!(
            p("exe:C:\\t\\live.exe loop").program_folder(),
            Some("C:\\t")
        );
        assert_eq!(p("exe:live.exe").program_folder(), None);
        assert_eq!(p("exe:C:\\t\\live.exe").origin(), "exe:C:\\t\\live.exe");
        assert_eq!(TargetSpec::Pid(7).origin(), "pid:7");
    }

    #[test]
    fn bad_programs() {
        for bad in [
            "exe:",
            "exe:   ",
            "exe:\"C:\\x.exe",
            "exe:\"\" a",
            "exe:a\0b",
        ] {
            assert!(TargetSpec::parse(bad).is_err(), "{bad:?}");
        }
    }
}
