//! Which symbol paths a client may set (`open_dump`/`attach`/`triage_dumps` `symbols_path`,
//! and `.sympath`, `.sympath+`, `.symfix` over `run_command`): every local folder inside the
//! allowed directories (or the server's own per-user download cache), every HTTP symbol server
//! one the server was configured with.

use crate::error::ToolError;
use crate::paths::AllowedDirs;
use ntdbg_engine::ErrorCode;
use ntdbg_symbols::{default_cache_dir, SymbolPath, MICROSOFT_SYMBOL_SERVER};

/// The HTTP symbol servers clients may name: Microsoft's public server, the servers of the
/// server process's `_NT_SYMBOL_PATH`, and those given with `ntdbg mcp --symbol-server`.
#[derive(Debug, Clone)]
pub struct SymbolServers {
    urls: Vec<String>,
}

impl Default for SymbolServers {
    fn default() -> SymbolServers {
        let mut urls = vec![MICROSOFT_SYMBOL_SERVER.to_string()];
        if let Some(env) = std::env::var("_NT_SYMBOL_PATH")
            .ok()
            .and_then(|text| SymbolPath::parse(&text).ok())
        {
            urls.extend(env.http_servers().into_iter().map(str::to_string));
        }
        let mut servers = SymbolServers { urls: Vec::new() };
        servers.add(urls);
        servers
    }
}

impl SymbolServers {
    /// Adds servers (duplicates and trailing `/` ignored).
    pub fn add(&mut self, urls: impl IntoIterator<Item = String>) {
        for url in urls {
            let url = url.trim().trim_end_matches('/').to_string();
            if !url.is_empty() && !self.allows(&url) {
                self.urls.push(url);
            }
        }
    }

    /// Whether `url` is one of them (case-insensitively, trailing `/` ignored).
    pub fn allows(&self, url: &str) -> bool {
        let url = url.trim_end_matches('/');
        self.urls.iter().any(|u| u.eq_ignore_ascii_case(url))
    }

    /// The servers, as configured.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }
}

/// Parses a client's symbol path text and checks it ([`check`]).
///
/// # Errors
/// `bad_symbol_path`, and [`check`]'s errors.
pub fn check_text(
    text: &str,
    allowed: &AllowedDirs,
    servers: &SymbolServers,
) -> Result<SymbolPath, ToolError> {
    let path = SymbolPath::parse(text).map_err(|e| {
        ToolError::new(ErrorCode::BadSymbolPath, format!("bad symbol path: {e}"))
            .with_hint("use folders separated by ';' (cache*DIR and srv*CACHE*URL are accepted)")
    })?;
    check(&path, allowed, servers)?;
    Ok(path)
}

/// Every local folder of `path` must lie inside the allowed directories (a folder that does
/// not exist yet, e.g. a new cache, is harmless; the per-user download cache is the server's
/// own), and every HTTP server must be a configured one.
///
/// # Errors
/// `path_not_allowed`, naming the allowed directories or servers.
pub fn check(
    path: &SymbolPath,
    allowed: &AllowedDirs,
    servers: &SymbolServers,
) -> Result<(), ToolError> {
    let own_cache = default_cache_dir();
    for dir in path.local_dirs() {
        if dir == own_cache {
            continue;
        }
        match allowed.check_existing(&dir) {
            Ok(_) => {}
            Err(e) if e.code == ErrorCode::FileNotFound => {}
            Err(e) => return Err(e),
        }
    }
    if let Some(url) = path.http_servers().into_iter().find(|u| !servers.allows(u)) {
        return Err(ToolError::new(
            ErrorCode::PathNotAllowed,
            format!("symbol server {url} is not one this server was configured with"),
        )
        .with_hint(format!(
            "use one of {} (ntdbg mcp --symbol-server adds more)",
            servers.urls().join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// An allowed directory of the test `test`'s own: tests run in parallel, and each removes
    /// its directory at its end.
    fn allowed(test: &str) -> (AllowedDirs, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("ntdbg-sympolicy-{}-{test}", std::process::id()));
        std::fs::create_dir_all(dir.join("syms")).expect("mkdir");
        (
            AllowedDirs::new(std::slice::from_ref(&dir)).expect("allowed"),
            dir,
        )
    }

    #[test]
    fn folders_inside_and_configured_servers_pass() {
        let (allowed, dir) = allowed("inside");
        let mut servers = SymbolServers::default();
        servers.add(["https://symbols.example.com/".to_string()]);
        let text = format!(
            "{};srv*{}*https://msdl.microsoft.com/download/symbols;srv*HTTPS://SYMBOLS.EXAMPLE.COM",
            dir.join("syms").display(),
            dir.join("new-cache").display()
        );
        assert!(check_text(&text, &allowed, &servers).is_ok());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn outside_folders_and_other_servers_are_refused_by_name() {
        let (allowed, dir) = allowed("outside");
        let servers = SymbolServers::default();
        let e = check_text("/etc", &allowed, &servers).expect_err("outside");
        assert_eq!(e.code, ErrorCode::PathNotAllowed);
        let text = format!("srv*{}*https://evil.example/syms", dir.display());
        let e = check_text(&text, &allowed, &servers).expect_err("server");
        assert_eq!(e.code, ErrorCode::PathNotAllowed);
        assert!(
            e.message.contains("https://evil.example/syms"),
            "{}",
            e.message
        );
        assert!(e.hint.unwrap_or_default().contains(MICROSOFT_SYMBOL_SERVER));
        let _ = std::fs::remove_dir_all(dir);
    }
}
