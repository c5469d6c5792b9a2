//! The redaction rules: what personal data looks like in a debugger's output, what must never
//! change (addresses, symbols, hex numbers), and how one string is rewritten.
//!
//! A rule finds a span and names its [`Category`]; a rule with a group named `v` replaces only
//! that group (the user name in `C:\Users\NAME\...`, the value of `password=VALUE`). Matches
//! that touch a protected span (a `module!function+0x1a` symbol, `0x…`, an 8- or 16-digit hex
//! number, `00000001`40001517`) are dropped, except a value named as a secret by its key.

use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// What a replacement hid; the placeholder and the trailer's counts use its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// A user name (a profile folder, `USERNAME=`, a name read from the dump).
    User,
    /// A machine or domain name (`COMPUTERNAME=`, a name read from the dump).
    Host,
    /// An e-mail address.
    Email,
    /// An IPv4 or IPv6 address.
    Ip,
    /// A password, token or key.
    Secret,
    /// A match of a `--redact-rules` pattern.
    Rule,
}

impl Category {
    /// The category's name in the trailer (`user`, `host`, …).
    pub fn name(self) -> &'static str {
        match self {
            Category::User => "user",
            Category::Host => "host",
            Category::Email => "email",
            Category::Ip => "ip",
            Category::Secret => "secret",
            Category::Rule => "rule",
        }
    }

    /// What the hidden text is replaced with: `<user>`, `<host>`, …
    pub fn placeholder(self) -> &'static str {
        match self {
            Category::User => "<user>",
            Category::Host => "<host>",
            Category::Email => "<email>",
            Category::Ip => "<ip>",
            Category::Secret => "<secret>",
            Category::Rule => "<redacted>",
        }
    }
}

/// Replacements made, by category.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts(pub BTreeMap<Category, usize>);

impl Counts {
    /// Replacements in all categories.
    pub fn total(&self) -> usize {
        self.0.values().sum()
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &Counts) {
        for (category, n) in &other.0 {
            *self.0.entry(*category).or_default() += n;
        }
    }

    /// `{"total": 3, "user": 2, "email": 1}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut tally = serde_json::Map::new();
        tally.insert("total".into(), self.total().into());
        for (category, n) in &self.0 {
            tally.insert(category.name().into(), (*n).into());
        }
        serde_json::Value::Object(tally)
    }

    /// `user 2, email 1` (categories in a fixed order).
    pub fn describe(&self) -> String {
        self.0
            .iter()
            .map(|(c, n)| format!("{} {n}", c.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One pattern and what it hides.
#[derive(Debug, Clone)]
pub struct Rule {
    regex: Regex,
    category: Category,
    /// Whether a match inside a protected span is still replaced (a value named a secret).
    overrides_protection: bool,
    /// The test a match must pass besides the pattern.
    check: Check,
}

/// A test a rule's match must pass besides its pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// None.
    Nothing,
    /// A profile folder that names a person (not `Public`, `Default`, …).
    ProfileName,
    /// A run that looks like a key ([`is_token`]).
    TokenShape,
    /// An IPv4 address not introduced as a version.
    NotVersion,
    /// An IPv6 address with a digit (`bad::cafe` is a C++ name).
    HasDigit,
    /// A value that looks like a secret: a digit, a symbol or mixed case (`token: each` in a
    /// sentence is none).
    SecretLike,
}

impl Rule {
    fn new(pattern: &str, category: Category) -> Rule {
        Rule {
            regex: Regex::new(pattern).expect("built-in redaction patterns compile"),
            category,
            overrides_protection: false,
            check: Check::Nothing,
        }
    }

    /// The rule's pattern.
    pub fn regex(&self) -> &Regex {
        &self.regex
    }

    fn checked(mut self, check: Check) -> Rule {
        self.check = check;
        self
    }

    /// A `--redact-rules` pattern.
    pub fn custom(regex: Regex) -> Rule {
        Rule {
            regex,
            category: Category::Rule,
            overrides_protection: false,
            check: Check::Nothing,
        }
    }

    /// A literal name, matched whole-word and case-insensitively (a name read from the dump).
    pub fn names(names: &[(String, Category)], category: Category) -> Option<Rule> {
        let alternatives: Vec<String> = names
            .iter()
            .filter(|(_, c)| *c == category)
            .map(|(n, _)| regex::escape(n))
            .collect();
        if alternatives.is_empty() {
            return None;
        }
        Regex::new(&format!(r"(?i)\b(?:{})\b", alternatives.join("|")))
            .ok()
            .map(|regex| Rule {
                regex,
                category,
                overrides_protection: false,
                check: Check::Nothing,
            })
    }
}

/// Folder names under `C:\Users` (or `/home`) that name no person.
const SHARED_PROFILES: &[&str] = &[
    "public",
    "default",
    "default user",
    "all users",
    "defaultapppool",
];

/// The profile folder rule: `C:\Users\NAME`, `\Users\NAME`, `/home/NAME`, `Documents and
/// Settings`; NAME may hold spaces when a separator follows it.
pub static PROFILE_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)[\\/](?:users|home|documents and settings)[\\/](?P<v>[^\\/\s"'<>|:*?]+(?: [^\\/\s"'<>|:*?]+)*[\\/]|[^\\/\s"'<>|:*?]+)"#,
    )
    .expect("the profile path pattern compiles")
});

/// The user name of a profile path's match, unless it is a shared profile.
pub fn profile_name(matched: &str) -> Option<&str> {
    let name = matched.trim_end_matches(['\\', '/']);
    let shared = SHARED_PROFILES.iter().any(|s| s.eq_ignore_ascii_case(name));
    (!shared && !name.is_empty()).then_some(name)
}

/// The built-in rules: profile paths, environment variables naming a user or machine, e-mail
/// addresses, IP addresses and secrets.
pub static BUILT_IN: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let secret_keys = r"(?:password|passwd|pwd|passphrase|secret|client_secret|token|access_token|refresh_token|api_?key|apikey|private_key|credentials?|[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY))";
    let mut rules = vec![
        Rule {
            regex: PROFILE_PATH.clone(),
            category: Category::User,
            overrides_protection: false,
            check: Check::ProfileName,
        },
        Rule::new(
            r#"\b(?:USERNAME|LOGNAME|USER)=(?P<v>[^\s"'\\;,=]+)"#,
            Category::User,
        ),
        Rule::new(
            r#"\b(?:COMPUTERNAME|USERDOMAIN|USERDNSDOMAIN|LOGONSERVER|CLIENTNAME|HOSTNAME|USERDOMAIN_ROAMINGPROFILE)=(?:\\\\)?(?P<v>[^\s"'\\;,=]+)"#,
            Category::Host,
        ),
        Rule::new(
            r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
            Category::Email,
        ),
        // IPv4 not inside a longer dotted run (a version 1.2.3.4.5, an OID).
        Rule::new(
            r"(?:^|[^\w.])(?P<v>(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})(?:$|[^\w.]|\.(?:$|[^\w]))",
            Category::Ip,
        )
        .checked(Check::NotVersion),
        // IPv6: eight groups, or a `::` form with at least three groups around it.
        Rule::new(
            r"(?i)(?:^|[^\w:.])(?P<v>(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}|(?:[0-9a-f]{1,4}:){1,6}(?::[0-9a-f]{1,4}){1,6}|(?:[0-9a-f]{1,4}:){2,6}:|::(?:[0-9a-f]{1,4}:){1,5}[0-9a-f]{1,4})(?:$|[^\w:])",
            Category::Ip,
        )
        .checked(Check::HasDigit),
        Rule::new(r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9\-._~+/]{16,}=*)", Category::Secret),
        // Tokens with a known shape: GitHub, OpenAI-style, Slack, AWS, Google, JWT.
        Rule::new(
            r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}|sk-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
            Category::Secret,
        ),
        // Hex of 40 digits or more: a key or a hash, never an address (16 digits at most).
        Rule::new(r"\b[0-9A-Fa-f]{40,}\b", Category::Secret),
        // Base64-like runs of 32 characters or more; `is_token` keeps those that mix cases
        // and digits. `/` ends a run: it separates the folders of a path.
        Rule::new(r"(?:^|[^A-Za-z0-9+/_-])(?P<v>[A-Za-z0-9+_-]{32,}={0,2})", Category::Secret)
            .checked(Check::TokenShape),
    ];
    // `key=value`: any value; `key: value`: one that looks like a secret.
    for (separator, check) in [("=", Check::Nothing), (":", Check::SecretLike)] {
        rules.push(Rule {
            regex: Regex::new(&format!(
                r#"(?i)\b{secret_keys}\s*{separator}\s*["']?(?P<v>[^\s"',;]+)"#
            ))
            .expect("the secret assignment pattern compiles"),
            category: Category::Secret,
            overrides_protection: true,
            check,
        });
    }
    rules
});

/// What must never change: symbols, `0x` numbers, WinDbg's split 64-bit addresses and hex
/// numbers of 8 or 16 digits (addresses, register values).
static PROTECTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"[A-Za-z0-9_.$\-]+![A-Za-z0-9_?@$:<>~.`'*]+(?:\+0x[0-9A-Fa-f]+)?|\b0x[0-9A-Fa-f`]+\b|\b[0-9A-Fa-f]{8}`[0-9A-Fa-f]{8}\b|\b[0-9A-Fa-f]{8}\b|\b[0-9A-Fa-f]{16}\b",
    )
    .expect("the protected pattern compiles")
});

/// Whether a base64-like run looks like a key: upper case, lower case and at least two digits,
/// not all hex.
fn is_token(text: &str) -> bool {
    let body = text.trim_end_matches('=');
    let digits = body.bytes().filter(u8::is_ascii_digit).count();
    body.bytes().any(|b| b.is_ascii_uppercase())
        && body.bytes().any(|b| b.is_ascii_lowercase())
        && digits >= 2
        && !body.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether a value named after `key:` looks like a secret: a digit, a symbol, or mixed case.
fn is_secret_like(value: &str) -> bool {
    value
        .bytes()
        .any(|b| b.is_ascii_digit() || b.is_ascii_punctuation())
        || (value.bytes().any(|b| b.is_ascii_uppercase())
            && value.bytes().any(|b| b.is_ascii_lowercase()))
}

/// Whether an IPv4 match is a version number (the word `version` just before it).
fn is_version(text: &str, start: usize) -> bool {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let from = start.saturating_sub(32).max(line_start);
    let from = crate::text::floor_char(text, from);
    text[from..start].to_ascii_lowercase().contains("version")
}

/// A span to replace.
struct Hit {
    start: usize,
    end: usize,
    category: Category,
}

/// Rewrites `text` by `rules`; returns the new text (`None`: unchanged) and what it replaced.
pub fn redact_str<'a>(
    text: &str,
    rules: impl IntoIterator<Item = &'a Rule>,
    counts: &mut Counts,
) -> Option<String> {
    let protected: Vec<(usize, usize)> = PROTECTED
        .find_iter(text)
        .map(|m| (m.start(), m.end()))
        .collect();
    let touches_protected =
        |start: usize, end: usize| protected.iter().any(|&(s, e)| s < end && start < e);
    let mut hits = Vec::new();
    for rule in rules {
        for caps in rule.regex.captures_iter(text) {
            let Some(m) = caps.name("v").or_else(|| caps.get(0)) else {
                continue;
            };
            let (start, mut end) = (m.start(), m.end());
            if start == end {
                continue;
            }
            let matched = m.as_str();
            let passes = match rule.check {
                Check::Nothing => true,
                Check::ProfileName => match profile_name(matched) {
                    Some(name) => {
                        end = start + name.len();
                        true
                    }
                    None => false,
                },
                Check::TokenShape => is_token(matched),
                Check::NotVersion => !is_version(text, start),
                Check::HasDigit => matched.bytes().any(|b| b.is_ascii_digit()),
                Check::SecretLike => is_secret_like(matched),
            };
            if !passes {
                continue;
            }
            if !rule.overrides_protection && touches_protected(start, end) {
                continue;
            }
            hits.push(Hit {
                start,
                end,
                category: rule.category,
            });
        }
    }
    if hits.is_empty() {
        return None;
    }
    // Earliest first, longest first at one start; overlapping later hits are dropped.
    hits.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for hit in hits {
        if hit.start < at {
            continue;
        }
        out.push_str(&text[at..hit.start]);
        out.push_str(hit.category.placeholder());
        *counts.0.entry(hit.category).or_default() += 1;
        at = hit.end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// Reads a `--redact-rules` file: one regular expression per line (Rust `regex` syntax);
/// blank lines and lines starting with `#` are skipped. A group named `v` limits the
/// replacement to that group.
pub fn load_rules_file(path: &std::path::Path) -> Result<Vec<Rule>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the redaction rules {}: {e}", path.display()))?;
    parse_rules(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The rules of a rules file's text (see [`load_rules_file`]).
pub fn parse_rules(text: &str) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let pattern = line.trim();
        if pattern.is_empty() || pattern.starts_with('#') {
            continue;
        }
        let regex = Regex::new(pattern)
            .map_err(|e| format!("line {}: not a regular expression: {e}", index + 1))?;
        if regex.is_match("") {
            return Err(format!(
                "line {}: the pattern matches the empty string",
                index + 1
            ));
        }
        rules.push(Rule::custom(regex));
    }
    Ok(rules)
}
