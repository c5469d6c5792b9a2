//! Colours: only when both ends are a terminal and `NO_COLOR` is unset (no-color.org), and
//! only plain SGR codes (bold prompt, red errors).

use std::io::IsTerminal;

/// Whether to colour what the REPL prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    colour: bool,
}

impl Style {
    /// The style for this process: colour on a Unix terminal without `NO_COLOR` (a Windows
    /// console shows escape codes only after a mode switch ntdbg does not make, so none there).
    pub fn detect() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style::new(cfg!(unix) && !no_color && std::io::stdout().is_terminal())
    }

    /// A style with colour on or off.
    pub fn new(colour: bool) -> Style {
        Style { colour }
    }

    /// `text` in bold (the prompt).
    pub fn prompt(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// `text` in red (error lines).
    pub fn error(self, text: &str) -> String {
        self.paint("31", text)
    }

    fn paint(self, sgr: &str, text: &str) -> String {
        if self.colour && !text.is_empty() {
            format!("\x1b[{sgr}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_style_adds_nothing() {
        assert_eq!(Style::new(false).error("error: x"), "error: x");
        assert_eq!(Style::new(false).prompt("0:000> "), "0:000> ");
    }

    #[test]
    fn colour_wraps_in_sgr_codes() {
        assert_eq!(Style::new(true).error("e"), "\x1b[31me\x1b[0m");
        assert_eq!(Style::new(true).prompt("p"), "\x1b[1mp\x1b[0m");
    }
}
