//! `ntdbg mcp --redact`: personal data hidden before output reaches a client.
//!
//! Every tool result of every profile leaves the server through one place, the server's
//! `call_tool`; there `Redactor::redact_response` rewrites each text block and every string
//! of the typed result (`structuredContent`), and appends a trailer line counting what it
//! replaced (`[redacted 4: user 2, email 1, ip 1]`, also in `_meta` as `ntdbg/redacted`). Tool
//! errors, progress messages and the server's instructions pass through it too.
//!
//! What is hidden: the built-in rules of [`rules`] (profile paths, `USERNAME=`-style
//! environment strings, e-mail and IP addresses, secrets), the patterns of a `--redact-rules`
//! file, and the user and machine names `harvest` reads from each open dump, wherever they
//! appear. Addresses, symbols, hex numbers and register values never change.

mod harvest;
pub mod rules;
#[cfg(test)]
mod tests;
pub mod transcript;

use crate::sessions::SessionSlot;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, MetaObject};
use rules::{Category, Counts, Rule, BUILT_IN};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

tokio::task_local! {
    static CURRENT: Option<Arc<Redactor>>;
}

/// The redaction rules of one server, and the names it has read from its dumps.
#[derive(Debug)]
pub struct Redactor {
    /// `--redact-rules`' patterns (the built-in rules always apply).
    custom: Vec<Rule>,
    learned: Mutex<Learned>,
    /// Every rule now in force; replaced as a whole when names are learned.
    compiled: RwLock<Arc<Compiled>>,
}

/// Names read from targets so far.
#[derive(Debug, Default)]
struct Learned {
    names: Vec<(String, Category)>,
    /// Sessions (dumps) already read; live targets are read again on each call.
    read: HashSet<String>,
}

/// The rules in force: one per category over the learned names, the built-in ones, the
/// custom ones, and all of them in one set that tells in one pass whether any matches.
#[derive(Debug)]
struct Compiled {
    rules: Vec<Rule>,
    any: Option<regex::RegexSet>,
}

impl Compiled {
    fn new(names: &[(String, Category)], custom: &[Rule]) -> Compiled {
        let mut rules: Vec<Rule> = [Category::User, Category::Host]
            .into_iter()
            .filter_map(|c| Rule::names(names, c))
            .collect();
        rules.extend(BUILT_IN.iter().cloned());
        rules.extend(custom.iter().cloned());
        let any = regex::RegexSet::new(rules.iter().map(|r| r.regex().as_str())).ok();
        Compiled { rules, any }
    }

    /// `text` rewritten, or `None` when no rule matches it.
    fn redact(&self, text: &str, counts: &mut Counts) -> Option<String> {
        if self.any.as_ref().is_some_and(|any| !any.is_match(text)) {
            return None;
        }
        rules::redact_str(text, &self.rules, counts)
    }
}

impl Redactor {
    /// The built-in rules plus `custom` ones (a `--redact-rules` file, see
    /// [`rules::load_rules_file`]).
    pub fn new(custom: Vec<Rule>) -> Redactor {
        let compiled = RwLock::new(Arc::new(Compiled::new(&[], &custom)));
        Redactor {
            custom,
            learned: Mutex::default(),
            compiled,
        }
    }

    /// The redactor of the tool call running now (set by [`Redactor::scope`]).
    pub(crate) fn current() -> Option<Arc<Redactor>> {
        CURRENT.try_with(Clone::clone).ok().flatten()
    }

    /// Runs `work` with `redactor` as [`Redactor::current`].
    pub(crate) async fn scope<F: std::future::Future>(
        redactor: Option<Arc<Redactor>>,
        work: F,
    ) -> F::Output {
        CURRENT.scope(redactor, work).await
    }

    /// Reads the names of every session not read yet (live targets: their module paths,
    /// every time). A session busy in another call is read on a later call.
    pub(crate) fn learn(&self, sessions: &[Arc<SessionSlot>]) {
        let mut new = Vec::new();
        for slot in sessions {
            let live = slot.live.is_some();
            if !live && self.learned().read.contains(&slot.id) {
                continue;
            }
            let Ok(session) = slot.session.try_lock() else {
                continue;
            };
            new.extend(if live {
                harvest::module_names(&session)
            } else {
                harvest::names(&session)
            });
            if !live {
                self.learned().read.insert(slot.id.clone());
            }
        }
        self.learn_names(new);
    }

    /// Adds user and machine names to hide wherever they appear.
    fn learn_names(&self, new: Vec<(String, Category)>) {
        let mut learned = self.learned();
        let before = learned.names.len();
        for name in new {
            if !learned.names.contains(&name) {
                learned.names.push(name);
            }
        }
        if learned.names.len() != before {
            // Longer names first, so `Zoe Quistberg` wins over `Zoe`.
            learned
                .names
                .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.cmp(b)));
            let compiled = Arc::new(Compiled::new(&learned.names, &self.custom));
            *self
                .compiled
                .write()
                .unwrap_or_else(PoisonError::into_inner) = compiled;
        }
    }

    /// The rules in force now.
    fn compiled(&self) -> Arc<Compiled> {
        self.compiled
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn learned(&self) -> std::sync::MutexGuard<'_, Learned> {
        self.learned.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `text` with everything the rules find replaced (counted in `counts`).
    pub fn redact_text(&self, text: &str, counts: &mut Counts) -> String {
        self.compiled()
            .redact(text, counts)
            .unwrap_or_else(|| text.to_string())
    }

    /// Rewrites every string (and object key) in `value`; numbers, booleans stay.
    pub fn redact_value(&self, value: &mut Value, counts: &mut Counts) {
        redact_value(&self.compiled(), value, counts);
    }

    /// Redacts a tool's answer in place and returns what was replaced. A task or a request
    /// for input carries no tool output and is left alone.
    pub(crate) fn redact_response(&self, response: &mut CallToolResponse) -> Counts {
        match response {
            CallToolResponse::Complete(result) => self.redact_result(result),
            _ => Counts::default(),
        }
    }

    /// Redacts a result's text blocks and typed result, then adds the trailer.
    fn redact_result(&self, result: &mut CallToolResult) -> Counts {
        let compiled = self.compiled();
        let mut counts = Counts::default();
        for block in &mut result.content {
            if let Some(redacted) = block
                .as_text()
                .and_then(|text| compiled.redact(&text.text, &mut counts))
            {
                *block = ContentBlock::text(redacted);
            }
        }
        if let Some(value) = &mut result.structured_content {
            redact_value(&compiled, value, &mut counts);
        }
        if counts.total() > 0 {
            add_trailer(result, &counts);
        }
        counts
    }
}

/// Rewrites every string (and object key) in `value` by `compiled`'s rules.
fn redact_value(compiled: &Compiled, value: &mut Value, counts: &mut Counts) {
    let redact = |text: &str, counts: &mut Counts| {
        compiled
            .redact(text, counts)
            .unwrap_or_else(|| text.to_string())
    };
    match value {
        Value::String(s) => {
            if let Some(redacted) = compiled.redact(s, counts) {
                *s = redacted;
            }
        }
        Value::Array(items) => {
            for item in items {
                redact_value(compiled, item, counts);
            }
        }
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                match &mut item {
                    // A version field's `1.2.13.0` is no IP address.
                    Value::String(s) if key.to_ascii_lowercase().contains("version") => {
                        let labelled = redact(&format!("version {s}"), counts);
                        *s = labelled
                            .strip_prefix("version ")
                            .unwrap_or(&labelled)
                            .to_string();
                    }
                    _ => redact_value(compiled, &mut item, counts),
                }
                map.insert(redact(&key, counts), item);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Appends `[redacted N: …]` to the last text block and the counts to `_meta`.
fn add_trailer(result: &mut CallToolResult, counts: &Counts) {
    let line = format!("[redacted {}: {}]", counts.total(), counts.describe());
    match result
        .content
        .iter_mut()
        .rev()
        .find_map(|b| b.as_text().map(|t| t.text.clone()).map(|t| (b, t)))
    {
        Some((block, text)) => {
            let separator = if text.is_empty() || text.ends_with('\n') {
                ""
            } else {
                "\n"
            };
            *block = ContentBlock::text(format!("{text}{separator}{line}"));
        }
        None => result.content.push(ContentBlock::text(line)),
    }
    result
        .meta
        .get_or_insert_with(|| MetaObject(serde_json::Map::new()))
        .0
        .insert("ntdbg/redacted".into(), counts.to_json());
}
