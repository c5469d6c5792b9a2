//! Text helpers for large outputs: head-and-tail previews, pages of lines and grep.
//!
//! `read_output` counts in lines, numbered from 1 as grep numbers them: a page starts at a line
//! number, and a grep hit's number is where to page from. Preview cuts are byte positions moved
//! back to a character boundary (and to a line boundary when one is near) so no output is split
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
    let line = text[..head_end].matches('\n').count() + 1;
    out.push_str(&format!(
        "... [{omitted} bytes omitted: read_output(command_id=\"{command_id}\", offset={line}) pages the full text by line, grep filters it] ...\n"
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

/// A page of whole lines.
#[derive(Debug, PartialEq, Eq)]
pub struct LinePage {
    /// The lines (grep: each prefixed `N:` with its line number).
    pub text: String,
    /// The number of the line the page starts at (1-based).
    pub first: usize,
    /// The number of the line the next page starts at; `None` at the end.
    pub next: Option<usize>,
}

/// The number of lines of `text` (a last line without a newline counts).
pub fn line_count(text: &str) -> usize {
    text.split_inclusive('\n').count()
}

/// Lines of `text` from line number `first` (1-based; 0 counts as 1): at most `limit` lines
/// and, past the first line, at most `max_bytes` bytes. With `pattern`, only the lines
/// containing it (case-insensitive), each prefixed by its number as `grep -n` prints them.
pub fn page_lines(
    text: &str,
    first: usize,
    limit: usize,
    max_bytes: usize,
    pattern: Option<&str>,
) -> LinePage {
    let first = first.max(1);
    let needle = pattern.map(str::to_lowercase);
    let mut page = LinePage {
        text: String::new(),
        first,
        next: None,
    };
    let mut taken = 0;
    for (index, line) in text.split_inclusive('\n').enumerate().skip(first - 1) {
        let number = index + 1;
        if let Some(n) = &needle {
            if !line.to_lowercase().contains(n.as_str()) {
                continue;
            }
        }
        let shown = match needle {
            Some(_) => format!("{number}:{}", line.trim_end_matches(['\r', '\n'])),
            None => line.to_string(),
        };
        if taken == limit.max(1) || (taken > 0 && page.text.len() + shown.len() > max_bytes) {
            page.next = Some(number);
            break;
        }
        page.text.push_str(&shown);
        if needle.is_some() {
            page.text.push('\n');
        }
        taken += 1;
    }
    page
}

/// The number of lines of `text` containing `pattern` (case-insensitive).
pub fn count_matches(text: &str, pattern: &str) -> usize {
    let needle = pattern.to_lowercase();
    text.split_inclusive('\n')
        .filter(|l| l.to_lowercase().contains(&needle))
        .count()
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
        assert!(p.contains("offset=1)"), "one long line: page from line 1");
    }

    #[test]
    fn the_preview_names_the_line_to_page_from() {
        let text: String = (0..5000).map(|i| format!("line {i:05}\n")).collect();
        let (p, _) = preview(&text, PREVIEW_THRESHOLD, "c7-ab");
        let head_lines = p.lines().take_while(|l| l.starts_with("line ")).count();
        assert!(
            p.contains(&format!("offset={})", head_lines + 1)),
            "{head_lines}"
        );
    }

    #[test]
    fn pages_of_lines_cover_the_text() {
        let text = "a\nb\nc\nd\ne";
        assert_eq!(line_count(text), 5);
        let one = page_lines(text, 0, 2, 100, None);
        assert_eq!(
            (one.text.as_str(), one.first, one.next),
            ("a\nb\n", 1, Some(3))
        );
        let last = page_lines(text, 5, 2, 100, None);
        assert_eq!((last.text.as_str(), last.next), ("e", None));
        assert_eq!(page_lines(text, 9, 2, 100, None).text, "");
        // The byte bound cuts between lines, never inside one.
        let bounded = page_lines("aaaa\nbbbb\n", 1, 10, 6, None);
        assert_eq!((bounded.text.as_str(), bounded.next), ("aaaa\n", Some(2)));
    }

    #[test]
    fn grep_numbers_lines_and_pages_from_a_line() {
        let text = "a\nNTDLL x\nb\nntdll y\nntdll z\n";
        assert_eq!(count_matches(text, "ntdll"), 3);
        let first = page_lines(text, 1, 2, 100, Some("ntdll"));
        assert_eq!(first.text, "2:NTDLL x\n4:ntdll y\n");
        assert_eq!(first.next, Some(5));
        let rest = page_lines(text, 5, 2, 100, Some("ntdll"));
        assert_eq!((rest.text.as_str(), rest.next), ("5:ntdll z\n", None));
    }
}
