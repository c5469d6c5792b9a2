//! The symbol path: WinDbg / `_NT_SYMBOL_PATH` syntax.
//!
//! Elements are separated by `;`:
//!
//! | text | entry |
//! |---|---|
//! | `DIR` | [`SymbolPathEntry::Local`]: searched in plain and store layout |
//! | `cache*DIR` | [`SymbolPathEntry::Cache`]: a downstream store, searched the same way |
//! | `srv*URL`, `srv*CACHE*URL`, `srv*C1*C2*URL` | [`SymbolPathEntry::Server`] |
//! | `symsrv*symsrv.dll*CACHE*URL` | the same as `srv*CACHE*URL` |
//! | `srv*` | the default: Microsoft's public symbol server, no cache |
//!
//! A server location that is not `http://`, `https://` or an object store's `s3://` (e.g.
//! `srv*C:\cache*\\share\symbols` or `srv*/mnt/symbols`) is a file-system store and is searched
//! like a local directory.
//! HTTP servers are contacted when a file is not found locally, and their downloads go to
//! the entry's first cache (see [`crate::SymbolStore`]).

use std::fmt;
use std::path::PathBuf;

use crate::SymbolError;

/// Microsoft's public symbol server, used by a bare `srv*`.
pub const MICROSOFT_SYMBOL_SERVER: &str = "https://msdl.microsoft.com/download/symbols";

/// One element of a symbol path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SymbolPathEntry {
    /// A plain directory.
    Local(PathBuf),
    /// `cache*DIR`: a local store that holds copies of files found elsewhere.
    Cache(PathBuf),
    /// `srv*[CACHE*...]LOCATION`: a symbol server (or file-system store) with its downstream
    /// caches.
    Server {
        /// Downstream stores, nearest first.
        caches: Vec<PathBuf>,
        /// The server: an `http(s)://` URL or a file-system store path.
        url: String,
    },
}

impl SymbolPathEntry {
    /// Whether this is a server reached over HTTP(S) (or an object store's `s3://`).
    pub fn is_http_server(&self) -> bool {
        matches!(self, SymbolPathEntry::Server { url, .. } if is_http(url))
    }

    /// The local directories this entry makes searchable, in search order. An HTTP server
    /// without a cache (`srv*URL`) downloads into [`default_cache_dir`], which is searched.
    pub fn local_dirs(&self) -> Vec<PathBuf> {
        match self {
            SymbolPathEntry::Local(dir) | SymbolPathEntry::Cache(dir) => vec![dir.clone()],
            SymbolPathEntry::Server { caches, url } => {
                let mut dirs: Vec<PathBuf> = caches.clone();
                if !is_http(url) {
                    dirs.push(PathBuf::from(url.as_str()));
                } else if dirs.is_empty() {
                    dirs.push(default_cache_dir());
                }
                dirs
            }
        }
    }
}

/// The per-user download cache used by `srv*URL` entries that name none:
/// `$NTDBG_SYMBOL_CACHE` if set, else `%LOCALAPPDATA%\ntdbg\symbols` on Windows,
/// `$XDG_CACHE_HOME/ntdbg/symbols` or `~/.cache/ntdbg/symbols` elsewhere (the temporary
/// folder as a last resort).
pub fn default_cache_dir() -> PathBuf {
    cache_dir_for(
        |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        },
        cfg!(windows),
        std::env::temp_dir(),
    )
}

/// [`default_cache_dir`]'s rule, given the environment (`var`, empty values already dropped),
/// whether the host is Windows, and the temporary folder.
fn cache_dir_for(var: impl Fn(&str) -> Option<PathBuf>, windows: bool, temp: PathBuf) -> PathBuf {
    if let Some(dir) = var("NTDBG_SYMBOL_CACHE") {
        return dir;
    }
    let base = if windows {
        var("LOCALAPPDATA")
    } else {
        var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))
    };
    base.map_or_else(
        || temp.join("ntdbg-symbols"),
        |b| b.join("ntdbg").join("symbols"),
    )
}

/// Whether `url` is downloaded from rather than searched: HTTP(S), or an object store
/// ([`crate::remote`]).
fn is_http(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    lower.starts_with("http://")
        || lower.starts_with("https://")
        || crate::remote::is_object_store(url)
}

/// An ordered list of places to look for symbols.
///
/// ```
/// use ntdbg_symbols::{SymbolPath, SymbolPathEntry};
/// let p = SymbolPath::parse(r"C:\syms; cache*C:\x ;SRV*/tmp/c*https://msdl.microsoft.com/download/symbols").unwrap();
/// assert_eq!(p.entries().len(), 3);
/// assert_eq!(p.to_string(), r"C:\syms;cache*C:\x;srv*/tmp/c*https://msdl.microsoft.com/download/symbols");
/// assert!(p.entries()[2].is_http_server());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SymbolPath {
    entries: Vec<SymbolPathEntry>,
}

impl SymbolPath {
    /// A path made of the given entries.
    pub fn new(entries: Vec<SymbolPathEntry>) -> SymbolPath {
        SymbolPath { entries }
    }

    /// Parses WinDbg symbol path text. Empty elements are skipped; keywords (`srv`, `cache`,
    /// `symsrv`) are case-insensitive; surrounding quotes and blanks are trimmed.
    pub fn parse(text: &str) -> Result<SymbolPath, SymbolError> {
        let mut entries = Vec::new();
        for raw in text.split(';') {
            let element = raw.trim().trim_matches('"').trim();
            if element.is_empty() {
                continue;
            }
            entries.push(parse_element(element)?);
        }
        Ok(SymbolPath { entries })
    }

    /// The entries, in search order.
    pub fn entries(&self) -> &[SymbolPathEntry] {
        &self.entries
    }

    /// Adds an entry at the end.
    pub fn push(&mut self, entry: SymbolPathEntry) {
        self.entries.push(entry);
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every local directory to search, in order, without repeats.
    pub fn local_dirs(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for dir in self.entries.iter().flat_map(SymbolPathEntry::local_dirs) {
            if !out.contains(&dir) {
                out.push(dir);
            }
        }
        out
    }

    /// The HTTP servers (and object stores) named in the path, each with the cache its
    /// downloads go to: the
    /// nearest `CACHE` of `srv*CACHE*URL`, else [`default_cache_dir`].
    pub fn http_server_caches(&self) -> Vec<(String, PathBuf)> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                SymbolPathEntry::Server { caches, url } if is_http(url) => Some((
                    url.clone(),
                    caches.first().cloned().unwrap_or_else(default_cache_dir),
                )),
                _ => None,
            })
            .collect()
    }

    /// The HTTP servers (and object stores) named in the path.
    pub fn http_servers(&self) -> Vec<&str> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                SymbolPathEntry::Server { url, .. } if is_http(url) => Some(url.as_str()),
                _ => None,
            })
            .collect()
    }
}

fn invalid(element: &str, reason: &'static str) -> SymbolError {
    SymbolError::InvalidSymbolPath {
        element: element.to_string(),
        reason,
    }
}

fn parse_element(element: &str) -> Result<SymbolPathEntry, SymbolError> {
    let parts: Vec<&str> = element.split('*').map(str::trim).collect();
    let Some((keyword, rest)) = parts.split_first() else {
        return Err(invalid(element, "empty element"));
    };
    if rest.is_empty() {
        return Ok(SymbolPathEntry::Local(PathBuf::from(element)));
    }
    match keyword.to_ascii_lowercase().as_str() {
        "cache" => match rest {
            [dir] if !dir.is_empty() => Ok(SymbolPathEntry::Cache(PathBuf::from(dir))),
            [_] => Err(invalid(element, "cache* needs a directory")),
            _ => Err(invalid(element, "cache* takes one directory")),
        },
        "srv" => parse_server(element, rest),
        "symsrv" => match rest.split_first() {
            Some((dll, rest)) if !dll.is_empty() && !rest.is_empty() => parse_server(element, rest),
            _ => Err(invalid(element, "symsrv* needs a DLL name and a store")),
        },
        _ => Err(invalid(
            element,
            "unknown keyword before '*' (expected srv, symsrv or cache)",
        )),
    }
}

fn parse_server(element: &str, parts: &[&str]) -> Result<SymbolPathEntry, SymbolError> {
    if parts.iter().all(|p| p.is_empty()) {
        return Ok(SymbolPathEntry::Server {
            caches: Vec::new(),
            url: MICROSOFT_SYMBOL_SERVER.to_string(),
        });
    }
    let Some((url, caches)) = parts.split_last() else {
        return Err(invalid(element, "srv* needs a store"));
    };
    if url.is_empty() {
        return Err(invalid(element, "srv* store location is empty"));
    }
    let caches = caches
        .iter()
        .filter(|c| !c.is_empty())
        .map(PathBuf::from)
        .collect();
    Ok(SymbolPathEntry::Server {
        caches,
        url: url.to_string(),
    })
}

/// The canonical text: elements joined with `;`, keywords lower-case, `symsrv*DLL*` written as
/// `srv*`.
impl fmt::Display for SymbolPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, entry) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            write!(f, "{entry}")?;
        }
        Ok(())
    }
}

/// The element's canonical text (`DIR`, `cache*DIR`, `srv*CACHE*URL`).
impl fmt::Display for SymbolPathEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SymbolPathEntry::Local(dir) => write!(f, "{}", dir.display()),
            SymbolPathEntry::Cache(dir) => write!(f, "cache*{}", dir.display()),
            SymbolPathEntry::Server { caches, url } => {
                f.write_str("srv*")?;
                for cache in caches {
                    write!(f, "{}*", cache.display())?;
                }
                f.write_str(url)
            }
        }
    }
}

impl std::str::FromStr for SymbolPath {
    type Err = SymbolError;
    fn from_str(s: &str) -> Result<SymbolPath, SymbolError> {
        SymbolPath::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn default_cache_location_per_os() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| PathBuf::from(v))
            }
        };
        let temp = || PathBuf::from("TMP");
        let all: &[(&str, &str)] = &[
            ("LOCALAPPDATA", "LAD"),
            ("XDG_CACHE_HOME", "XDG"),
            ("HOME", "H"),
        ];
        let sub = |base: &str| Path::new(base).join("ntdbg").join("symbols");
        assert_eq!(cache_dir_for(env(all), true, temp()), sub("LAD"));
        assert_eq!(cache_dir_for(env(all), false, temp()), sub("XDG"));
        let home: &[(&str, &str)] = &[("HOME", "H"), ("LOCALAPPDATA", "LAD")];
        assert_eq!(
            cache_dir_for(env(home), false, temp()),
            Path::new("H").join(".cache").join("ntdbg").join("symbols")
        );
        let unix_only: &[(&str, &str)] = &[("HOME", "H"), ("XDG_CACHE_HOME", "XDG")];
        assert_eq!(
            cache_dir_for(env(unix_only), true, temp()),
            Path::new("TMP").join("ntdbg-symbols"),
            "Windows never falls back to HOME"
        );
        let chosen: &[(&str, &str)] = &[("NTDBG_SYMBOL_CACHE", "C"), ("LOCALAPPDATA", "LAD")];
        assert_eq!(cache_dir_for(env(chosen), true, temp()), Path::new("C"));
    }

    /// On Windows the real environment has LOCALAPPDATA (Wine sets it too).
    #[cfg(windows)]
    #[test]
    fn default_cache_is_under_localappdata_on_windows() {
        if std::env::var_os("NTDBG_SYMBOL_CACHE").is_some() {
            return;
        }
        let local = std::env::var_os("LOCALAPPDATA").expect("LOCALAPPDATA is set on Windows");
        assert_eq!(
            default_cache_dir(),
            PathBuf::from(local).join("ntdbg").join("symbols")
        );
    }

    #[test]
    fn all_element_kinds() {
        let p = SymbolPath::parse(
            r#"dir1; "C:\My Syms" ;cache*C:\x;srv*CACHE*https://example.com/s;srv*https://u;SymSrv*symsrv.dll*c:\d*http://h;srv*"#,
        )
        .unwrap();
        assert_eq!(
            p.entries(),
            &[
                SymbolPathEntry::Local("dir1".into()),
                SymbolPathEntry::Local(r"C:\My Syms".into()),
                SymbolPathEntry::Cache(r"C:\x".into()),
                SymbolPathEntry::Server {
                    caches: vec!["CACHE".into()],
                    url: "https://example.com/s".into()
                },
                SymbolPathEntry::Server {
                    caches: vec![],
                    url: "https://u".into()
                },
                SymbolPathEntry::Server {
                    caches: vec![r"c:\d".into()],
                    url: "http://h".into()
                },
                SymbolPathEntry::Server {
                    caches: vec![],
                    url: MICROSOFT_SYMBOL_SERVER.into()
                },
            ]
        );
        assert_eq!(
            p.to_string(),
            r"dir1;C:\My Syms;cache*C:\x;srv*CACHE*https://example.com/s;srv*https://u;srv*c:\d*http://h;srv*https://msdl.microsoft.com/download/symbols"
        );
        // Round trip.
        assert_eq!(SymbolPath::parse(&p.to_string()).unwrap(), p);
        assert_eq!(p.http_servers().len(), 4);
    }

    #[test]
    fn file_system_stores_are_searched() {
        let p = SymbolPath::parse("srv*/tmp/cache*/mnt/store;/a;cache*/tmp/cache;srv*/b").unwrap();
        assert_eq!(
            p.local_dirs(),
            vec![
                PathBuf::from("/tmp/cache"),
                PathBuf::from("/mnt/store"),
                PathBuf::from("/a"),
                PathBuf::from("/b")
            ]
        );
        assert!(p.http_servers().is_empty());
    }

    #[test]
    fn bad_elements_are_reported() {
        for (text, code) in [
            ("cache*", "invalid_symbol_path"),
            ("cache*a*b", "invalid_symbol_path"),
            ("foo*bar", "invalid_symbol_path"),
            ("symsrv*symsrv.dll", "invalid_symbol_path"),
            ("srv*cache*", "invalid_symbol_path"),
        ] {
            let err = SymbolPath::parse(text).unwrap_err();
            assert_eq!(err.code(), code, "{text}");
        }
        assert!(SymbolPath::parse("  ;; ").unwrap().is_empty());
    }
}
