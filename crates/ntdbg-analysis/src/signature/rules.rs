//! Signature rules files (`--signature-rules FILE`): one directive per line that extends or
//! replaces the built-in lists of [`super::lists`]. The format is in `docs/signatures.md`:
//!
//! ```text
//! # comments and blank lines are ignored
//! prefix-function      MyAlloc*
//! irrelevant-function  ReportCrash
//! irrelevant-module    crashreporter
//! clear                irrelevant-modules
//! frames               2
//! ```

use super::SignatureConfig;
use std::fmt;
use std::path::Path;

/// Largest file read as rules (a rules file is a few hundred lines).
const MAX_RULES_BYTES: u64 = 1 << 20;
/// Most frames a signature may name.
const MAX_FRAMES: usize = 16;

/// Why a rules file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesError {
    /// The rules file, when the rules came from one.
    pub file: Option<String>,
    /// The 1-based line the error is on (0 when the file itself could not be read).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "signature rules {file}")?;
            if self.line > 0 {
                write!(f, ", ")?;
            } else {
                return write!(f, ": {}", self.message);
            }
        }
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for RulesError {}

impl SignatureConfig {
    /// The built-in configuration changed by the rules in `text`.
    pub fn from_rules(text: &str) -> Result<SignatureConfig, RulesError> {
        let mut config = SignatureConfig::default();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let err = |message: String| RulesError {
                file: None,
                line,
                message,
            };
            let content = raw.split('#').next().unwrap_or_default().trim();
            if content.is_empty() {
                continue;
            }
            let (directive, value) = match content.split_once(char::is_whitespace) {
                Some((d, v)) => (d, v.trim()),
                None => (content, ""),
            };
            if value.is_empty() {
                return Err(err(format!("`{directive}` needs a value")));
            }
            match directive {
                "prefix-function" => config.prefix_functions.push(value.to_string()),
                "irrelevant-function" => config.irrelevant_functions.push(value.to_string()),
                "irrelevant-module" => config.irrelevant_modules.push(value.to_ascii_lowercase()),
                "clear" => match value {
                    "prefix-functions" => config.prefix_functions.clear(),
                    "irrelevant-functions" => config.irrelevant_functions.clear(),
                    "irrelevant-modules" => config.irrelevant_modules.clear(),
                    other => {
                        return Err(err(format!(
                            "`clear {other}`: expected prefix-functions, irrelevant-functions \
                             or irrelevant-modules"
                        )))
                    }
                },
                "frames" => {
                    config.frames = value
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=MAX_FRAMES).contains(n))
                        .ok_or_else(|| {
                            err(format!(
                                "`frames {value}`: expected a number from 1 to {MAX_FRAMES}"
                            ))
                        })?;
                }
                other => {
                    return Err(err(format!(
                        "unknown directive `{other}` (expected prefix-function, \
                         irrelevant-function, irrelevant-module, clear or frames)"
                    )))
                }
            }
        }
        Ok(config)
    }

    /// [`SignatureConfig::from_rules`] on a file; the error names the file.
    pub fn from_rules_file(path: &Path) -> Result<SignatureConfig, RulesError> {
        let file = Some(path.display().to_string());
        let read_error = |message: String| RulesError {
            file: file.clone(),
            line: 0,
            message,
        };
        let bytes = ntdbg_files::read_regular(path, MAX_RULES_BYTES).map_err(|e| {
            read_error(match e.kind() {
                std::io::ErrorKind::FileTooLarge => {
                    format!("more than the {MAX_RULES_BYTES} bytes a rules file may have")
                }
                _ => e.to_string(),
            })
        })?;
        let text = String::from_utf8(bytes).map_err(|e| read_error(e.to_string()))?;
        SignatureConfig::from_rules(&text).map_err(|e| RulesError { file, ..e })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_extend_or_replace_the_lists() {
        let config = SignatureConfig::from_rules(
            "# mine\n\nprefix-function MyAlloc*  # allocator\nirrelevant-module CrashReporter\n\
             clear irrelevant-functions\nirrelevant-function Report\nframes 2\n",
        )
        .unwrap_or_default();
        assert!(config.prefix_functions.iter().any(|p| p == "MyAlloc*"));
        assert!(config.prefix_functions.iter().any(|p| p == "memcpy"));
        assert!(config.is_system("crashreporter.dll"));
        assert!(config.is_system("ntdll"));
        assert_eq!(config.irrelevant_functions, vec!["Report".to_string()]);
        assert_eq!(config.frames, 2);
    }

    #[test]
    fn bad_lines_name_their_line() {
        let e = SignatureConfig::from_rules("frames 3\n\nprefx-function a\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e
            .to_string()
            .starts_with("line 3: unknown directive `prefx-function`"));
        let e = SignatureConfig::from_rules("frames 0").unwrap_err();
        assert_eq!((e.line, e.message.contains("1 to 16")), (1, true));
        let e = SignatureConfig::from_rules("\nclear everything").unwrap_err();
        assert_eq!(e.line, 2);
        let e = SignatureConfig::from_rules("irrelevant-module").unwrap_err();
        assert_eq!(e.to_string(), "line 1: `irrelevant-module` needs a value");
    }

    #[test]
    fn unreadable_files_say_which() {
        let e = SignatureConfig::from_rules_file(Path::new("/nonexistent/rules.txt")).unwrap_err();
        assert_eq!(e.line, 0);
        assert!(
            e.to_string()
                .starts_with("signature rules /nonexistent/rules.txt: "),
            "{e}"
        );
    }
}
