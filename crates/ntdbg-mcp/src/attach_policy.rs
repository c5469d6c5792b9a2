//! Which live targets MCP clients may attach (`ntdbg mcp --allow-attach`).
//!
//! `attach` makes the server connect where a client says, so without a limit any client could
//! use it to reach hosts the server can reach and tell open ports from closed ones. For a server
//! only this machine reaches (stdio, or HTTP on loopback) the default is the targets of this
//! machine: GDB stubs on loopback addresses (`localhost`, `127.0.0.0/8`, `::1`), where
//! `gdbserver`, `winedbg --gdb` and a local QEMU listen, and on Windows processes by id or
//! started by path; such a client could reach all of them itself. A server that other machines
//! reach (`--unsafe-http`) attaches nothing unless told what. `--allow-attach` replaces the
//! default with its patterns:
//!
//! - `local`: GDB stubs on loopback addresses, any port;
//! - `gdb:HOST:PORT`: a stub at HOST (a name or address, matched as written) and PORT, either
//!   of which may be `*`;
//! - `pid`, `exe`: Windows processes by id, or started by path;
//! - `none`: no live target at all (the live tools are then left out of `tools/list`).
//!
//! Every attach the policy refuses, and every one that fails before the target answered, gets
//! the same error, so a client learns nothing about what listens where; the server's log says
//! which it was.

use std::fmt;
use std::net::IpAddr;

/// One allowed kind of target.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    /// GDB stubs on loopback addresses, any port.
    Local,
    /// GDB stubs at a host (`None`: any) and port (`None`: any).
    Gdb {
        host: Option<String>,
        port: Option<u16>,
    },
    /// Windows processes by id.
    Pid,
    /// Windows processes started by path.
    Exe,
}

/// The live targets clients may attach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachPolicy {
    rules: Vec<Rule>,
}

impl Default for AttachPolicy {
    /// Targets on this machine: `local`, `pid`, `exe`.
    fn default() -> AttachPolicy {
        AttachPolicy {
            rules: vec![Rule::Local, Rule::Pid, Rule::Exe],
        }
    }
}

impl AttachPolicy {
    /// No live target.
    pub fn none() -> AttachPolicy {
        AttachPolicy { rules: Vec::new() }
    }
}

impl fmt::Display for AttachPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rules.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<String> = self
            .rules
            .iter()
            .map(|rule| match rule {
                Rule::Local => "local".to_string(),
                Rule::Gdb { host, port } => format!(
                    "gdb:{}:{}",
                    host.as_deref().unwrap_or("*"),
                    port.map_or("*".to_string(), |p| p.to_string())
                ),
                Rule::Pid => "pid".to_string(),
                Rule::Exe => "exe".to_string(),
            })
            .collect();
        f.write_str(&names.join(", "))
    }
}

impl AttachPolicy {
    /// The policy of `--allow-attach` patterns (see the module docs); with none, the default
    /// of a server only this machine reaches, or nothing for one others reach (`remote`).
    ///
    /// # Errors
    /// A pattern that is none of the forms, with what is wrong.
    pub fn parse(patterns: &[String], remote: bool) -> Result<AttachPolicy, String> {
        if patterns.is_empty() {
            return Ok(if remote {
                AttachPolicy::none()
            } else {
                AttachPolicy::default()
            });
        }
        let mut rules = Vec::new();
        for pattern in patterns {
            match pattern.trim().to_ascii_lowercase().as_str() {
                "none" if patterns.len() == 1 => return Ok(AttachPolicy { rules }),
                "none" => {
                    return Err("--allow-attach none cannot be combined with other patterns".into())
                }
                "local" => rules.push(Rule::Local),
                "pid" => rules.push(Rule::Pid),
                "exe" => rules.push(Rule::Exe),
                other => rules.push(gdb_rule(other).ok_or_else(|| {
                    format!(
                        "--allow-attach {pattern}: expected local, pid, exe, none or \
                         gdb:HOST:PORT (HOST or PORT may be *)"
                    )
                })?),
            }
        }
        Ok(AttachPolicy { rules })
    }

    /// Whether any live target may be attached.
    pub fn allows_any(&self) -> bool {
        !self.rules.is_empty()
    }

    /// Whether `target` (`gdb:HOST:PORT`, `pid:N`, `exe:PATH ARGS`, as `attach` takes it) may
    /// be attached.
    pub fn allows(&self, target: &str) -> bool {
        let target = target.trim();
        let Some((kind, rest)) = target.split_once(':') else {
            return false;
        };
        match kind.to_ascii_lowercase().as_str() {
            "pid" => self.rules.contains(&Rule::Pid),
            "exe" => self.rules.contains(&Rule::Exe),
            "gdb" => {
                let Some((host, port)) = split_host_port(rest) else {
                    return false;
                };
                let Ok(port) = port.parse::<u16>() else {
                    return false;
                };
                self.rules.iter().any(|rule| match rule {
                    Rule::Local => is_loopback(host),
                    Rule::Gdb {
                        host: allowed_host,
                        port: allowed_port,
                    } => {
                        allowed_host
                            .as_deref()
                            .is_none_or(|h| h.eq_ignore_ascii_case(host))
                            && allowed_port.is_none_or(|p| p == port)
                    }
                    Rule::Pid | Rule::Exe => false,
                })
            }
            _ => false,
        }
    }
}

/// `gdb:HOST:PORT` as a rule (`*` for any host or port).
fn gdb_rule(pattern: &str) -> Option<Rule> {
    let rest = pattern.strip_prefix("gdb:")?;
    let (host, port) = split_host_port(rest)?;
    let host = match host {
        "*" => None,
        "" => return None,
        h => Some(h.to_string()),
    };
    let port = match port {
        "*" => None,
        p => Some(p.parse().ok()?),
    };
    Some(Rule::Gdb { host, port })
}

/// `HOST:PORT` split at the last colon, with an IPv6 host's brackets removed.
fn split_host_port(text: &str) -> Option<(&str, &str)> {
    let (host, port) = text.rsplit_once(':')?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Some((host, port))
}

/// Whether `host` names this machine's loopback interface as written (`localhost`, an address
/// in `127.0.0.0/8`, `::1`); a name that merely resolves there is not taken on trust.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|a| a.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(patterns: &[&str]) -> AttachPolicy {
        AttachPolicy::parse(
            &patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            false,
        )
        .expect("a valid policy")
    }

    #[test]
    fn the_default_allows_this_machine_only() {
        let p = AttachPolicy::default();
        for allowed in [
            "gdb:127.0.0.1:1234",
            "gdb:localhost:1",
            "gdb:[::1]:9",
            "gdb:127.8.9.10:80",
            "pid:42",
            "exe:C:\\app.exe -x",
        ] {
            assert!(p.allows(allowed), "{allowed}");
        }
        for refused in [
            "gdb:10.0.0.5:1234",
            "gdb:example.com:22",
            "gdb:0.0.0.0:1234",
            "gdb:127.0.0.1",
            "gdb:127.0.0.1:99999",
            "tcp:127.0.0.1:1",
            "127.0.0.1:1",
        ] {
            assert!(!p.allows(refused), "{refused}");
        }
    }

    #[test]
    fn patterns_replace_the_default() {
        let p = policy(&["gdb:vm.lab:*", "gdb:*:3333"]);
        assert!(p.allows("gdb:VM.lab:1234") && p.allows("gdb:10.1.1.1:3333"));
        assert!(!p.allows("gdb:127.0.0.1:1234") && !p.allows("pid:4"));
        assert_eq!(p.to_string(), "gdb:vm.lab:*, gdb:*:3333");
        let none = policy(&["none"]);
        assert!(!none.allows_any() && !none.allows("gdb:127.0.0.1:1"));
        assert_eq!(none.to_string(), "none");
    }

    #[test]
    fn a_bad_pattern_is_named() {
        for bad in [
            vec!["gdb:host"],
            vec!["gdb::1"],
            vec!["gdb:h:port"],
            vec!["ssh"],
            vec!["none", "local"],
        ] {
            let bad: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
            assert!(AttachPolicy::parse(&bad, false).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_server_others_reach_attaches_nothing_unless_told() {
        assert!(!AttachPolicy::parse(&[], true).unwrap().allows_any());
        assert_eq!(
            AttachPolicy::parse(&[], false).unwrap(),
            AttachPolicy::default()
        );
        let told = AttachPolicy::parse(&["gdb:10.0.0.5:1234".to_string()], true).unwrap();
        assert!(told.allows("gdb:10.0.0.5:1234"));
    }
}
