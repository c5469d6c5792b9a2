//! The directories the server may read and write, and the check every path goes through.
//!
//! Paths are resolved before they are checked: relative paths against the server's working
//! directory, then `..` and symbolic links by `canonicalize`, so `allowed/../../etc` or a link
//! out of an allowed folder is refused. A file that does not exist yet (an `output_file`) is
//! checked through its canonical parent folder. Network and device paths (`\\server\share`,
//! `//server/share`, `\\?\…`) are refused outright on every OS: they never name a file under an
//! allowed directory, and on Windows merely opening one contacts another host.

use crate::error::ToolError;
use ntdbg_engine::ErrorCode;
use std::path::{Component, Path, PathBuf};

/// The canonical directories file access is limited to.
#[derive(Debug, Clone)]
pub struct AllowedDirs {
    dirs: Vec<PathBuf>,
}

impl AllowedDirs {
    /// Canonicalizes `dirs`; an empty list means the current directory.
    ///
    /// # Errors
    /// A directory that does not exist or is not a directory, naming it.
    pub fn new(dirs: &[PathBuf]) -> std::io::Result<AllowedDirs> {
        let dirs = if dirs.is_empty() {
            vec![PathBuf::from(".")]
        } else {
            dirs.to_vec()
        };
        let mut out = Vec::with_capacity(dirs.len());
        for dir in dirs {
            let canonical = dir.canonicalize().map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("allowed directory {}: {e}", dir.display()),
                )
            })?;
            if !canonical.is_dir() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotADirectory,
                    format!("allowed directory {} is not a directory", dir.display()),
                ));
            }
            if !out.contains(&canonical) {
                out.push(canonical);
            }
        }
        Ok(AllowedDirs { dirs: out })
    }

    /// The allowed directories, canonical.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The first allowed directory: where relative paths from a client are resolved.
    pub fn primary(&self) -> &Path {
        // `new` always keeps at least one directory.
        self.dirs
            .first()
            .map(PathBuf::as_path)
            .unwrap_or(Path::new("."))
    }

    /// The directories as text, for hints.
    pub fn describe(&self) -> Vec<String> {
        self.dirs.iter().map(|d| d.display().to_string()).collect()
    }

    fn contains(&self, canonical: &Path) -> bool {
        self.dirs.iter().any(|d| canonical.starts_with(d))
    }

    /// Resolves a path given by a client: relative paths are taken from the first allowed
    /// directory.
    fn absolute(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.primary().join(path)
        }
    }

    /// Refuses UNC and device paths: two leading slashes or backslashes, in any mix.
    fn refuse_network(&self, path: &Path) -> Result<(), ToolError> {
        let text = path.as_os_str().as_encoded_bytes();
        let separator = |b: Option<&u8>| matches!(b, Some(b'/' | b'\\'));
        if separator(text.first()) && separator(text.get(1)) {
            return Err(ToolError::path_not_allowed(path, &self.describe()));
        }
        Ok(())
    }

    /// Checks an existing file or folder and returns its canonical path.
    ///
    /// # Errors
    /// `file_not_found` when it does not exist, `path_not_allowed` when it resolves outside the
    /// allowed directories.
    pub fn check_existing(&self, path: &Path) -> Result<PathBuf, ToolError> {
        self.refuse_network(path)?;
        let absolute = self.absolute(path);
        let canonical = match absolute.canonicalize() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Say "not found" only for paths inside the allowed area, so the error does not
                // reveal what exists elsewhere on the host.
                let lexical = lexical_normalize(&absolute);
                if !self.contains(&lexical) && !self.contains_parent(&lexical) {
                    return Err(ToolError::path_not_allowed(path, &self.describe()));
                }
                return Err(ToolError::new(
                    ErrorCode::FileNotFound,
                    format!("{} does not exist", path.display()),
                )
                .with_hint("check the path; list_dumps shows the dumps in an allowed folder"));
            }
            Err(e) => {
                return Err(ToolError::new(
                    ErrorCode::IoError,
                    format!("cannot open {}: {e}", path.display()),
                )
                .with_hint("check the path and its permissions"))
            }
        };
        if self.contains(&canonical) {
            Ok(canonical)
        } else {
            Err(ToolError::path_not_allowed(path, &self.describe()))
        }
    }

    fn contains_parent(&self, lexical: &Path) -> bool {
        lexical
            .ancestors()
            .filter_map(|a| a.canonicalize().ok())
            .next()
            .is_some_and(|c| self.contains(&c))
    }

    /// Checks a file to be written: its folder must exist inside an allowed directory, and an
    /// existing file (or link) at the path must resolve inside one too.
    ///
    /// # Errors
    /// `path_not_allowed` outside the allowed directories, `file_not_found` when the folder is
    /// missing, `invalid_arguments` when the path names no file.
    pub fn check_writable(&self, path: &Path) -> Result<PathBuf, ToolError> {
        self.refuse_network(path)?;
        let absolute = self.absolute(path);
        let Some(name) = absolute.file_name().map(|n| n.to_os_string()) else {
            return Err(ToolError::invalid_arguments(format!(
                "{} does not name a file",
                path.display()
            )));
        };
        let parent = absolute.parent().unwrap_or(Path::new("/"));
        let folder = match parent.canonicalize() {
            Ok(f) => f,
            Err(_) => {
                if !self.contains_parent(&lexical_normalize(parent)) {
                    return Err(ToolError::path_not_allowed(path, &self.describe()));
                }
                return Err(ToolError::new(
                    ErrorCode::FileNotFound,
                    format!("folder {} does not exist", parent.display()),
                )
                .with_hint("write into an existing folder under an allowed directory"));
            }
        };
        let target = folder.join(name);
        // An existing entry may be a link: the file actually written is where it points.
        let resolved = match target.canonicalize() {
            Ok(c) => c,
            Err(_) if std::fs::symlink_metadata(&target).is_ok() => {
                // A dangling link: refuse rather than create a file wherever it points.
                return Err(ToolError::path_not_allowed(path, &self.describe()));
            }
            Err(_) => target,
        };
        if self.contains(&resolved) && resolved.is_dir() {
            return Err(ToolError::invalid_arguments(format!(
                "{} is a directory, not a file",
                path.display()
            )));
        }
        if self.contains(&resolved) {
            Ok(resolved)
        } else {
            Err(ToolError::path_not_allowed(path, &self.describe()))
        }
    }
}

/// Removes `.` and folds `..` without touching the file system (for paths that do not exist).
fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_tree(name: &str) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("ntdbg-mcp-paths-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("allowed/sub")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::write(root.join("allowed/a.dmp"), b"MDMP").unwrap();
        std::fs::write(root.join("outside/secret.dmp"), b"MDMP").unwrap();
        root
    }

    #[test]
    fn inside_is_allowed_and_dotdot_is_not() {
        let root = temp_tree("dotdot");
        let allowed = AllowedDirs::new(&[root.join("allowed")]).unwrap();
        assert!(allowed.check_existing(&root.join("allowed/a.dmp")).is_ok());
        assert!(
            allowed.check_existing(Path::new("a.dmp")).is_ok(),
            "relative to the first dir"
        );
        let e = allowed
            .check_existing(&root.join("allowed/../outside/secret.dmp"))
            .unwrap_err();
        assert_eq!(e.code, "path_not_allowed");
        let e = allowed
            .check_existing(Path::new("/etc/passwd"))
            .unwrap_err();
        assert_eq!(e.code, "path_not_allowed");
        let e = allowed
            .check_existing(Path::new("/nonexistent/zz.dmp"))
            .unwrap_err();
        assert_eq!(e.code, "path_not_allowed", "no existence oracle outside");
        let e = allowed
            .check_existing(&root.join("allowed/missing.dmp"))
            .unwrap_err();
        assert_eq!(e.code, "file_not_found");
        let _ = std::fs::remove_dir_all(root);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_are_refused() {
        let root = temp_tree("link");
        let allowed = AllowedDirs::new(&[root.join("allowed")]).unwrap();
        std::os::unix::fs::symlink(
            root.join("outside/secret.dmp"),
            root.join("allowed/link.dmp"),
        )
        .unwrap();
        std::os::unix::fs::symlink(root.join("outside"), root.join("allowed/out")).unwrap();
        assert_eq!(
            allowed
                .check_existing(&root.join("allowed/link.dmp"))
                .unwrap_err()
                .code,
            "path_not_allowed"
        );
        assert_eq!(
            allowed
                .check_writable(&root.join("allowed/link.dmp"))
                .unwrap_err()
                .code,
            "path_not_allowed"
        );
        assert_eq!(
            allowed
                .check_writable(&root.join("allowed/out/new.txt"))
                .unwrap_err()
                .code,
            "path_not_allowed"
        );
        std::os::unix::fs::symlink(root.join("outside/none.txt"), root.join("allowed/dangling"))
            .unwrap();
        assert_eq!(
            allowed
                .check_writable(&root.join("allowed/dangling"))
                .unwrap_err()
                .code,
            "path_not_allowed"
        );
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn writable_checks_the_folder() {
        let root = temp_tree("write");
        let allowed = AllowedDirs::new(&[root.join("allowed")]).unwrap();
        let ok = allowed
            .check_writable(&root.join("allowed/sub/out.txt"))
            .unwrap();
        assert!(ok.ends_with("sub/out.txt"));
        assert_eq!(
            allowed
                .check_writable(&root.join("outside/out.txt"))
                .unwrap_err()
                .code,
            "path_not_allowed"
        );
        assert_eq!(
            allowed
                .check_writable(&root.join("allowed/nope/out.txt"))
                .unwrap_err()
                .code,
            "file_not_found"
        );
        assert_eq!(
            allowed
                .check_writable(&root.join("allowed/sub"))
                .unwrap_err()
                .code,
            "invalid_arguments"
        );
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn network_paths_are_refused() {
        let root = temp_tree("unc");
        let allowed = AllowedDirs::new(&[root.join("allowed")]).unwrap();
        let inside = root.join("allowed/a.dmp").display().to_string();
        for path in [
            r"\\server\share\x.dmp".to_string(),
            "//server/share/x.dmp".to_string(),
            r"\\?\C:\x.dmp".to_string(),
            r"\\.\pipe\x".to_string(),
            format!("/{inside}"),
            format!(r"\{inside}"),
        ] {
            let path = Path::new(&path);
            assert_eq!(
                allowed.check_existing(path).unwrap_err().code,
                "path_not_allowed"
            );
            assert_eq!(
                allowed.check_writable(path).unwrap_err().code,
                "path_not_allowed"
            );
        }
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn missing_allowed_dir_is_an_error() {
        assert!(AllowedDirs::new(&[PathBuf::from("/definitely/not/here")]).is_err());
    }
}
