//! The directories the server may read and write, and the check every path goes through.
//!
//! Paths are resolved before they are checked: relative paths against the server's working
//! directory, then `..` and symbolic links by `canonicalize`, so `allowed/../../etc` or a link
//! out of an allowed folder is refused. A file that does not exist yet (an `output_file`) is
//! checked through its canonical parent folder. Network and device paths (`\\server\share`,
//! `//server/share`, `\\?\UNC\…`, `\\.\pipe\…`) are refused outright on every OS: they never
//! name a file under an allowed directory, and on Windows merely opening one contacts another
//! host. A long-path spelling of a local drive (`\\?\C:\…`, what `canonicalize` returns on
//! Windows) is an ordinary path on Windows and refused elsewhere, where it names nothing.
//!
//! Containment is decided on canonical paths only, component by component; on Windows the drive
//! is compared in one spelling (`\\?\C:\` and `C:\` alike) and every component without regard
//! to case, as the file system does.

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
        self.dirs
            .iter()
            .any(|d| is_within(canonical, d, cfg!(windows)))
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

    /// Refuses network and device paths (see [`PathKind`]), and long-path drive spellings
    /// outside Windows.
    fn refuse_network(&self, path: &Path) -> Result<(), ToolError> {
        let allowed = match PathKind::of(path.as_os_str().as_encoded_bytes()) {
            PathKind::Ordinary => true,
            PathKind::LongDrive => cfg!(windows),
            PathKind::Network | PathKind::Device => false,
        };
        if allowed {
            Ok(())
        } else {
            Err(ToolError::path_not_allowed(path, &self.describe()))
        }
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
            Err(e) => return Err(self.unresolvable(path, &absolute, &e)),
        };
        if self.contains(&canonical) {
            Ok(canonical)
        } else {
            Err(ToolError::path_not_allowed(path, &self.describe()))
        }
    }

    /// The error for a path that does not resolve. What went wrong (`file_not_found`, an I/O
    /// error) is said only when the deepest part of the path that exists lies inside an
    /// allowed directory; anywhere else the answer is `path_not_allowed` whatever the cause
    /// (missing, not a directory, no permission, a dangling link), so an error never tells
    /// what exists outside.
    fn unresolvable(&self, path: &Path, absolute: &Path, error: &std::io::Error) -> ToolError {
        if !self.deepest_existing_is_inside(absolute) {
            return ToolError::path_not_allowed(path, &self.describe());
        }
        if error.kind() == std::io::ErrorKind::NotFound {
            ToolError::new(
                ErrorCode::FileNotFound,
                format!("{} does not exist", path.display()),
            )
            .with_hint("check the path; list_dumps shows the dumps in an allowed folder")
        } else {
            ToolError::new(
                ErrorCode::IoError,
                format!("cannot open {}: {error}", path.display()),
            )
            .with_hint("check the path and its permissions")
        }
    }

    /// Whether the deepest ancestor of `path` (itself included) that exists resolves inside an
    /// allowed directory. An ancestor that exists only as a dangling link counts as outside:
    /// where it points is not known.
    fn deepest_existing_is_inside(&self, path: &Path) -> bool {
        let Some(existing) = path
            .ancestors()
            .find(|a| std::fs::symlink_metadata(a).is_ok())
        else {
            return false;
        };
        existing
            .canonicalize()
            .is_ok_and(|canonical| self.contains(&canonical))
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
            Err(e) => {
                return Err(match self.unresolvable(path, parent, &e) {
                    missing if missing.code == ErrorCode::FileNotFound => ToolError::new(
                        ErrorCode::FileNotFound,
                        format!("folder {} does not exist", parent.display()),
                    )
                    .with_hint("write into an existing folder under an allowed directory"),
                    other => other,
                })
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

/// What a path names, by its spelling alone (the same rules on every OS, so they are tested
/// everywhere). `/` and `\\` are both separators here, as on Windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PathKind {
    /// A local path: relative, rooted, or with a drive letter (`C:\x`, `C:x`).
    Ordinary,
    /// A long-path spelling of a local drive: `\\?\C:\…` (Win32 file namespace, no parsing).
    LongDrive,
    /// A share on another host: `\\server\share`, `//server/share`, `\\?\UNC\server\share`.
    Network,
    /// The Win32 device namespace or anything else behind `\\.\` or `\\?\`: pipes,
    /// volumes, raw disks (`\\.\pipe\x`, `\\.\C:`, `\\?\Volume{…}`, `\\?\GLOBALROOT`).
    Device,
}

impl PathKind {
    fn of(text: &[u8]) -> PathKind {
        let sep = |i: usize| matches!(text.get(i), Some(b'/' | b'\\'));
        if !(sep(0) && sep(1)) {
            return PathKind::Ordinary;
        }
        match (text.get(2), sep(3)) {
            (Some(b'?'), true) => {
                let rest = &text[4..];
                let is_drive = rest.len() >= 2
                    && rest[0].is_ascii_alphabetic()
                    && rest[1] == b':'
                    && (rest.len() == 2 || matches!(rest[2], b'\\' | b'/'));
                let is_unc = rest.len() >= 4
                    && rest[..3].eq_ignore_ascii_case(b"UNC")
                    && matches!(rest[3], b'\\' | b'/');
                if is_drive {
                    PathKind::LongDrive
                } else if is_unc {
                    PathKind::Network
                } else {
                    PathKind::Device
                }
            }
            (Some(b'.'), true) => PathKind::Device,
            _ => PathKind::Network,
        }
    }
}

/// Whether `path` is `dir` or inside it, both canonical: component by component, the prefix
/// in one spelling (`\\?\C:\` and `C:\`, `\\?\UNC\s\x` and `\\s\x`), and, with `fold_case`
/// (Windows), without regard to case.
fn is_within(path: &Path, dir: &Path, fold_case: bool) -> bool {
    let mut path = path.components();
    for want in dir.components() {
        match path.next() {
            Some(got) if same_component(got, want, fold_case) => {}
            _ => return false,
        }
    }
    true
}

fn same_component(a: Component<'_>, b: Component<'_>, fold_case: bool) -> bool {
    let same_text = |a: &std::ffi::OsStr, b: &std::ffi::OsStr| {
        if fold_case {
            let (a, b) = (a.to_string_lossy(), b.to_string_lossy());
            a == b || a.to_lowercase() == b.to_lowercase()
        } else {
            a == b
        }
    };
    match (a, b) {
        (Component::Prefix(a), Component::Prefix(b)) => {
            use std::path::Prefix::{Disk, VerbatimDisk, VerbatimUNC, UNC};
            match (a.kind(), b.kind()) {
                (Disk(x) | VerbatimDisk(x), Disk(y) | VerbatimDisk(y)) => {
                    x.eq_ignore_ascii_case(&y)
                }
                (UNC(s1, h1) | VerbatimUNC(s1, h1), UNC(s2, h2) | VerbatimUNC(s2, h2)) => {
                    same_text(s1, s2) && same_text(h1, h2)
                }
                _ => same_text(a.as_os_str(), b.as_os_str()),
            }
        }
        (Component::Normal(a), Component::Normal(b)) => same_text(a, b),
        (a, b) => a == b,
    }
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

    /// Issue 35, item 6: whatever stops a path outside from resolving (a file used as a folder,
    /// a missing entry behind a link out), the answer is the one a missing path gets.
    #[test]
    fn outside_paths_answer_alike_whether_or_not_they_exist() {
        let root = temp_tree("oracle");
        let allowed = AllowedDirs::new(&[root.join("allowed")]).unwrap();
        let outside = [
            root.join("outside/secret.dmp/x.dmp"),
            root.join("outside/missing.dmp"),
            root.join("nowhere/missing.dmp"),
            root.join("allowed/../outside/secret.dmp/x.dmp"),
        ];
        for path in &outside {
            assert_eq!(
                allowed.check_existing(path).unwrap_err().code,
                "path_not_allowed",
                "{}",
                path.display()
            );
            assert_eq!(
                allowed
                    .check_writable(&path.join("out.txt"))
                    .unwrap_err()
                    .code,
                "path_not_allowed",
                "{}",
                path.display()
            );
        }
        // Inside, the cause is told: a file used as a folder is "Not a directory" on Unix;
        // Windows answers that the path is not found.
        let e = allowed
            .check_existing(&root.join("allowed/a.dmp/x.dmp"))
            .unwrap_err();
        let told = if cfg!(windows) {
            "file_not_found"
        } else {
            "io_error"
        };
        assert_eq!(e.code, told, "{}", e.message);
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
        // Behind a link out, a missing file is as refused as an existing one.
        for name in ["secret.dmp", "missing.dmp"] {
            assert_eq!(
                allowed
                    .check_existing(&root.join("allowed/out").join(name))
                    .unwrap_err()
                    .code,
                "path_not_allowed",
                "{name}"
            );
        }
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
        // Without its drive (`\Temp\…` for `C:\Temp\…`), so one more separator in front
        // makes a network spelling of the same file.
        let inside = match inside.find(":\\") {
            Some(1) => inside[2..].to_string(),
            _ => inside,
        };
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
                "path_not_allowed",
                "{}",
                path.display()
            );
            assert_eq!(
                allowed.check_writable(path).unwrap_err().code,
                "path_not_allowed",
                "{}",
                path.display()
            );
        }
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn path_kinds_by_spelling() {
        use PathKind::*;
        for (text, kind) in [
            (r"C:\dumps\a.dmp", Ordinary),
            ("C:a.dmp", Ordinary),
            (r"\dumps\a.dmp", Ordinary),
            ("/dumps/a.dmp", Ordinary),
            ("a.dmp", Ordinary),
            ("", Ordinary),
            (r"\\?\C:\dumps\a.dmp", LongDrive),
            (r"\\?\c:", LongDrive),
            ("//?/C:/dumps", LongDrive),
            (r"\\?\UNC\server\share\a.dmp", Network),
            (r"\\?\unc/server/share", Network),
            (r"\\server\share\a.dmp", Network),
            ("//server/share/a.dmp", Network),
            (r"\/server", Network),
            (r"\\", Network),
            (r"\\?", Network),
            (r"\\.\pipe\x", Device),
            (r"\\.\C:", Device),
            (r"\\.\PhysicalDrive0", Device),
            (r"\\?\Volume{0}\a.dmp", Device),
            (r"\\?\GLOBALROOT\Device\x", Device),
            (r"\\?\C", Device),
            (r"\\?\CC:\x", Device),
        ] {
            assert_eq!(PathKind::of(text.as_bytes()), kind, "{text}");
        }
    }

    #[test]
    fn long_drive_paths_are_for_windows_only() {
        let root = temp_tree("long");
        let allowed = AllowedDirs::new(&[root.join("allowed")]).unwrap();
        let long = Path::new(r"\\?\C:\dumps\a.dmp");
        let refused = allowed.refuse_network(long).is_err();
        assert_eq!(refused, !cfg!(windows));
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn containment_is_by_component_and_folds_case_when_asked() {
        let within = |p: &str, d: &str, fold| is_within(Path::new(p), Path::new(d), fold);
        assert!(within("/srv/dumps/a.dmp", "/srv/dumps", false));
        assert!(within("/srv/dumps", "/srv/dumps", false));
        assert!(
            !within("/srv/dumps2/a.dmp", "/srv/dumps", false),
            "a prefix of a name"
        );
        assert!(!within("/srv", "/srv/dumps", false));
        assert!(!within("/SRV/Dumps/a.dmp", "/srv/dumps", false));
        assert!(within("/SRV/Dumps/a.dmp", "/srv/dumps", true));
        assert!(within("/srv/ÄRGER/a.dmp", "/srv/ärger", true));
        assert!(!within("/srv/other/a.dmp", "/srv/dumps", true));
    }

    /// What `list_dumps` does: every file it finds is already canonical, and must pass again.
    #[test]
    fn canonical_paths_pass_again() {
        let root = temp_tree("canon");
        let allowed = AllowedDirs::new(&[root.join("allowed")]).unwrap();
        let canonical = root.join("allowed/a.dmp").canonicalize().unwrap();
        assert_eq!(allowed.check_existing(&canonical).unwrap(), canonical);
        let folder = allowed.dirs()[0].clone();
        assert!(allowed.check_existing(&folder).is_ok());
        assert!(allowed.check_writable(&folder.join("new.txt")).is_ok());
        let _ = std::fs::remove_dir_all(root);
    }

    #[cfg(windows)]
    #[test]
    fn windows_drive_spellings_and_case_are_one_path() {
        let within = |p: &str, d: &str| is_within(Path::new(p), Path::new(d), true);
        assert!(within(r"C:\Dumps\a.dmp", r"\\?\c:\dumps"));
        assert!(within(r"\\?\C:\DUMPS\x\a.dmp", r"C:\Dumps"));
        assert!(!within(r"D:\Dumps\a.dmp", r"\\?\C:\Dumps"));
        assert!(within(r"\\?\UNC\Host\Share\a.dmp", r"\\host\share"));
        assert!(!within(r"\\host\other\a.dmp", r"\\host\share"));

        let root = temp_tree("wincase");
        let allowed = AllowedDirs::new(&[root.join("allowed")]).unwrap();
        // The folder spelled in another case and without the long-path prefix: the same file.
        let plain = root.join("allowed").canonicalize().unwrap();
        let plain = plain
            .to_string_lossy()
            .trim_start_matches(r"\\?\")
            .to_uppercase();
        let upper = PathBuf::from(format!(r"{plain}\A.DMP"));
        assert!(
            allowed.check_existing(&upper).is_ok(),
            "{}",
            upper.display()
        );
        let missing = PathBuf::from(format!(r"{plain}\MISSING.DMP"));
        assert_eq!(
            allowed.check_existing(&missing).unwrap_err().code,
            "file_not_found",
            "inside, spelled differently"
        );
        let dotdot = PathBuf::from(format!(r"{plain}\..\outside\secret.dmp"));
        assert_eq!(
            allowed.check_existing(&dotdot).unwrap_err().code,
            "path_not_allowed"
        );
        let long = PathBuf::from(format!(r"\\?\{plain}\a.dmp"));
        assert!(allowed.check_existing(&long).is_ok(), "{}", long.display());
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn missing_allowed_dir_is_an_error() {
        assert!(AllowedDirs::new(&[PathBuf::from("/definitely/not/here")]).is_err());
    }
}
