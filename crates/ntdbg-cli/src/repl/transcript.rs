//! What the REPL shows: written to stdout and, while a log is open (`.logopen FILE`,
//! `.logappend FILE`, closed by `.logclose`), to that file as well, without colour codes.

use super::style::Style;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The REPL's output: the terminal (or pipe) and the open log file, if any.
pub struct Transcript {
    out: std::io::Stdout,
    style: Style,
    log: Option<(PathBuf, File)>,
}

impl Transcript {
    /// Output to stdout in `style`, no log open.
    pub fn new(style: Style) -> Transcript {
        Transcript {
            out: std::io::stdout(),
            style,
            log: None,
        }
    }

    /// Shows `text` as it is.
    pub fn show(&mut self, text: &str) -> std::io::Result<()> {
        self.out.write_all(text.as_bytes())?;
        self.out.flush()?;
        self.write_log(text);
        Ok(())
    }

    /// Shows a prompt for piped input; the log gets it with the line ([`Transcript::typed`]).
    pub fn prompt(&mut self, prompt: &str) -> std::io::Result<()> {
        self.out.write_all(prompt.as_bytes())?;
        self.out.flush()
    }

    /// Shows an error (red on a colour terminal).
    pub fn show_error(&mut self, text: &str) -> std::io::Result<()> {
        self.out.write_all(self.style.error(text).as_bytes())?;
        self.out.flush()?;
        self.write_log(text);
        Ok(())
    }

    /// Records a line the user typed after its prompt: the terminal already shows it, the
    /// log gets it as `PROMPT LINE`.
    pub fn typed(&mut self, prompt: &str, line: &str) -> std::io::Result<()> {
        self.write_log(&format!("{prompt}{line}\n"));
        Ok(())
    }

    /// Shows a line read from piped input after its prompt (nothing typed it on a screen), and
    /// logs it as [`Transcript::typed`] does.
    pub fn echo(&mut self, prompt: &str, line: &str) -> std::io::Result<()> {
        self.out.write_all(format!("{line}\n").as_bytes())?;
        self.out.flush()?;
        self.typed(prompt, line)
    }

    /// Handles `.logopen FILE`, `.logappend FILE` and `.logclose` when `line` is one of
    /// them; `None` for any other line. The answer is WinDbg's confirmation, or an error.
    pub fn log_command(&mut self, line: &str) -> Option<Result<String, String>> {
        let (word, rest) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(w, r)| (w, r.trim()));
        let append = match word.to_ascii_lowercase().as_str() {
            ".logopen" => false,
            ".logappend" => true,
            ".logclose" => return Some(Ok(self.close())),
            _ => return None,
        };
        let mut path = rest;
        if let Some((option, _)) = path.split_once(char::is_whitespace) {
            if option.len() == 2 && option.starts_with('/') {
                return Some(Err(format!(
                    "{word}: option {option} is not supported; give only the file name"
                )));
            }
        }
        if path.starts_with('"') && path.ends_with('"') && path.len() >= 2 {
            path = &path[1..path.len() - 1];
        }
        if path.is_empty() {
            return Some(Err(format!("{word} needs a file name: {word} FILE")));
        }
        Some(self.open(Path::new(path), append))
    }

    fn open(&mut self, path: &Path, append: bool) -> Result<String, String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(path)
            .map_err(|e| format!("cannot open log file '{}': {e}", path.display()))?;
        let closed = self.close();
        self.log = Some((path.to_path_buf(), file));
        Ok(format!("{closed}Opened log file '{}'\n", path.display()))
    }

    /// Closes the log, saying which; empty text when none was open.
    fn close(&mut self) -> String {
        match self.log.take() {
            Some((path, _)) => format!("Closing open log file {}\n", path.display()),
            None => String::new(),
        }
    }

    /// Writes `text` to the log; a failing write closes the log with a warning on stderr
    /// rather than stopping the session.
    fn write_log(&mut self, text: &str) {
        if let Some((path, file)) = &mut self.log {
            if let Err(e) = file.write_all(text.as_bytes()) {
                eprintln!(
                    "warning: writing the log file {} failed ({e}); it is closed",
                    path.display()
                );
                self.log = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_lines_are_not_log_commands() {
        let mut t = Transcript::new(Style::new(false));
        assert!(t.log_command("kb").is_none());
        assert!(t.log_command(".logfile").is_none());
    }

    #[test]
    fn log_open_write_close_append() {
        let dir = std::env::temp_dir().join(format!("ntdbg-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("session.log");
        let mut t = Transcript::new(Style::new(false));
        assert_eq!(t.log_command(".logclose"), Some(Ok(String::new())));
        let opened = t
            .log_command(&format!(".logopen {}", file.display()))
            .unwrap()
            .unwrap();
        assert!(opened.starts_with("Opened log file"), "{opened}");
        t.typed("0:000> ", "kb").unwrap();
        t.write_log("output\n");
        let closed = t.log_command(".logclose").unwrap().unwrap();
        assert!(closed.starts_with("Closing open log file"), "{closed}");
        t.log_command(&format!(".logappend \"{}\"", file.display()))
            .unwrap()
            .unwrap();
        t.write_log("more\n");
        t.log_command(".logclose").unwrap().unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "0:000> kb\noutput\nmore\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn log_errors_are_clear() {
        let mut t = Transcript::new(Style::new(false));
        let e = t.log_command(".logopen /t x.log").unwrap().unwrap_err();
        assert!(e.contains("option /t is not supported"), "{e}");
        let e = t.log_command(".logopen").unwrap().unwrap_err();
        assert!(e.contains("needs a file name"), "{e}");
        let e = t
            .log_command(".logopen /nonexistent-dir/x/y.log")
            .unwrap()
            .unwrap_err();
        assert!(e.contains("cannot open log file"), "{e}");
    }
}
