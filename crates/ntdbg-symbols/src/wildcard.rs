//! WinDbg-style wildcard matching (`*` any run, `?` one character), case-insensitive.

/// Whether `text` matches `pattern` as a whole.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().flat_map(char::to_lowercase).collect();
    let t: Vec<char> = text.chars().flat_map(char::to_lowercase).collect();
    // Greedy with one backtrack point: linear in practice, never exponential.
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::wildcard_match as m;

    #[test]
    fn stars_and_questions() {
        assert!(m("crash_*", "crash_null_write(int*)"));
        assert!(m("*NULL*", "crash_null_write"));
        assert!(m("main", "MAIN"));
        assert!(m("ma?n", "main"));
        assert!(!m("ma?n", "mainx"));
        assert!(m("*", ""));
        assert!(!m("", "x"));
        assert!(m("a*b*c", "aXXbYYbc"));
        assert!(!m("a*b*c", "aXXbYYb"));
        assert!(m("**x", "abcx"));
    }
}
