//! Text helpers for large outputs: head-and-tail previews, byte-offset pages and grep.
//!
//! Offsets are byte offsets into the UTF-8 text; every cut is moved back to a character
//! boundary (and, for previews, to a line boundary when one is near) so no output is split
//! inside a character.

/// Outputs longer than this are previewed (head and tail) instead of sent whole.
pub const PREVIEW_THRESHOLD: usize = 16 * 1024;

/// A preview of `text` at most about `limit` bytes long: the head, a marker line naming how
/// much was left out and how to read it, and the tail. Returns the text itself when it fits.
pub fn preview(text: &str, limit: usize, command_id: &str) -> (String, bool) {
    if text.len() <= limit {
        return (text.to_string(), false);
    }
    let tail_len = limit / 4;
    let head_len = limit.saturating_sub(tail_len);
    let head_end = line_cut_back(text, head_len);
    let tail_start = line_cut_forward(text, text.len().saturating_sub(tail_len)).max(head_end);
    let omitted = tail_start - head_end;
    let mut out = String::with_capacity(limit + 160);
    out.push_str(&text[..head_end]);
    if !out.ends_with('\n') && !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!(
        "... [{omitted} bytes omitted: read_output(command_id=\"{command_id}\", offset={head_end}) pages the full text, grep filters it] ...\n"
    ));
    out.push_str(&text[tail_start..]);
    (out, true)
}

/// The largest char boundary at or below `at`.
pub fn floor_char(text: &str, at: usize) -> usize {
    let mut i = at.min(text.len());
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A cut at or before `at`: just after a newline when one lies in the last quarter.
fn line_cut_back(text: &str, at: usize) -> usize {
    let at = floor_char(text, at);
    match text[..at].rfind('\n') {
        Some(nl) if nl + 1 >= at - at / 4 => nl + 1,
        _ => at,
    }
}

/// A cut at or after `at`: just after a newline when one lies within the first quarter of
/// what follows.
fn line_cut_forward(text: &str, at: usize) -> usize {
    let at = floor_char(text, at);
    let rest = text.len() - at;
    match text[at..].find('\n') {
        Some(nl) if nl < rest / 4 => at + nl + 1,
        _ => at,
    }
}

/// One page of a text: `limit` bytes from `offset`, cut back to a char boundary. Returns the
/// page and the offset after it (`None` at the end).
pub fn page(text: &str, offset: usize, limit: usize) -> (&str, Option<usize>) {
    let start = floor_char(text, offset);
    let mut end = floor_char(text, start.saturating_add(limit.max(1)));
    if end == start && start < text.len() {
        // A limit smaller than one character still moves forward by a whole character.
        end = text[start..]
            .chars()
            .next()
            .map_or(text.len(), |c| start + c.len_utf8());
    }
    let next = (end < text.len()).then_some(end);
    (&text[start..end], next)
}

/// The lines of `text` containing `pattern` (case-insensitive), each prefixed by its 1-based
/// line number, as `grep -n -i` prints them.
pub fn grep(text: &str, pattern: &str) -> String {
    let needle = pattern.to_lowercase();
    let mut out = String::new();
    for (n, line) in text.lines().enumerate() {
        if line.to_lowercase().contains(&needle) {
            out.push_str(&format!("{}:{line}\n", n + 1));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_whole() {
        assert_eq!(preview("abc\n", 100, "c1-x"), ("abc\n".to_string(), false));
    }

    #[test]
    fn long_text_keeps_head_and_tail() {
        let text: String = (0..5000).map(|i| format!("line {i:05}\n")).collect();
        let (p, truncated) = preview(&text, PREVIEW_THRESHOLD, "c7-ab");
        assert!(truncated);
        assert!(p.len() < PREVIEW_THRESHOLD + 200, "{}", p.len());
        assert!(p.starts_with("line 00000\n"));
        assert!(p.ends_with("line 04999\n"));
        assert!(p.contains("read_output(command_id=\"c7-ab\""));
        // Cuts fall on line boundaries.
        for line in p.lines() {
            assert!(
                line.starts_with("line ") || line.starts_with("... ["),
                "{line}"
            );
        }
    }

    #[test]
    fn cuts_respect_utf8() {
        let text = "é".repeat(20_000);
        let (p, truncated) = preview(&text, 1001, "c1-x");
        assert!(truncated);
        assert!(p.contains("bytes omitted"));
        let (pg, next) = page(&text, 1, 3);
        assert_eq!(pg, "é");
        assert_eq!(next, Some(2));
    }

    #[test]
    fn pages_cover_the_text() {
        let text = "0123456789";
        assert_eq!(page(text, 0, 4), ("0123", Some(4)));
        assert_eq!(page(text, 8, 4), ("89", None));
        assert_eq!(page(text, 20, 4), ("", None));
    }

    #[test]
    fn grep_numbers_lines() {
        assert_eq!(
            grep("a\nNTDLL x\nb\nntdll y\n", "ntdll"),
            "2:NTDLL x\n4:ntdll y\n"
        );
    }
}
