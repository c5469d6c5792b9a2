//! Tab completion: command names (the command table and the REPL's own), `module!symbol`
//! (the session's modules; symbols of the modules whose symbols are already loaded, through
//! their name lookup), register names (`@rax`, `r rax`) and `~N` thread numbers.

use ntdbg_engine::Session;
use ntdbg_symbols::ModuleSymbols;
use std::sync::Arc;

/// At most this many candidates are offered for one Tab.
pub const MAX_CANDIDATES: usize = 200;

/// Commands the REPL itself answers, besides the command table's.
pub const REPL_COMMANDS: &[&str] = &[".logopen", ".logappend", ".logclose", "q", "quit"];

/// What completion can offer, taken from the session before each prompt (the editor cannot
/// borrow the session while a line is read).
#[derive(Default)]
pub struct Candidates {
    /// Each module's WinDbg name, with its symbols when they are already loaded.
    modules: Vec<(String, Option<Arc<ModuleSymbols>>)>,
    /// The current context's register names.
    registers: Vec<&'static str>,
    /// How many threads the target has (`~0` … `~N-1`).
    threads: usize,
}

impl Candidates {
    /// A snapshot of `session`. Loads nothing: a module's symbols are completed once some
    /// command has loaded them (`k`, `.ecxr`, `x`, `lm` …).
    pub fn of(session: &Session) -> Candidates {
        let modules = session
            .target()
            .modules()
            .iter()
            .map(|m| {
                (
                    ntdbg_engine::module_name(&m.name),
                    session.symbols().loaded(m.raw.base_of_image),
                )
            })
            .collect();
        let registers = session
            .context()
            .map(|ctx| {
                ntdbg_engine::registers::general_registers(&ctx)
                    .into_iter()
                    .map(|(name, _)| name)
                    .collect()
            })
            .unwrap_or_default();
        Candidates {
            modules,
            registers,
            threads: session.target().threads().len(),
        }
    }

    /// Where the word under the cursor starts in `line[..pos]` and what it may become.
    pub fn complete(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let before = &line[..pos];
        let start = before
            .rfind(|c: char| c.is_whitespace() || matches!(c, ';' | '(' | ',' | '+' | '='))
            .map_or(0, |i| i + 1);
        let word = &before[start..];
        let mut out: Vec<String> = if word.starts_with('~') && at_command_start(&before[..start]) {
            self.threads(word)
        } else if let Some(reg) = word.strip_prefix('@') {
            self.registers(reg).map(|r| format!("@{r}")).collect()
        } else if let Some((module, symbol)) = word.split_once('!') {
            self.symbols(module, symbol)
        } else if at_command_start(&before[..start]) {
            commands(word)
        } else if word.is_empty() {
            Vec::new()
        } else {
            let modules = self
                .modules
                .iter()
                .filter(|(m, _)| starts_with_ignore_case(m, word))
                .map(|(m, _)| format!("{m}!"));
            self.registers(word)
                .map(str::to_string)
                .chain(modules)
                .collect()
        };
        out.sort();
        out.dedup();
        out.truncate(MAX_CANDIDATES);
        (start, out)
    }

    fn threads(&self, word: &str) -> Vec<String> {
        (0..self.threads)
            .map(|n| format!("~{n}"))
            .filter(|t| t.starts_with(word))
            .collect()
    }

    fn registers<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'static str> + 'a {
        self.registers
            .iter()
            .copied()
            .filter(move |r| starts_with_ignore_case(r, prefix))
    }

    /// `module!prefix` → the loaded symbols of that module starting with `prefix` (names
    /// without their argument lists), bounded.
    fn symbols(&self, module: &str, prefix: &str) -> Vec<String> {
        if prefix.contains(['*', '?']) {
            return Vec::new();
        }
        let pattern = format!("{prefix}*");
        let mut out = Vec::new();
        for (name, symbols) in &self.modules {
            let Some(symbols) = symbols
                .as_ref()
                .filter(|_| name.eq_ignore_ascii_case(module))
            else {
                continue;
            };
            for entry in symbols.find(&pattern) {
                let bare = ntdbg_symbols::strip_parameters(&entry.name);
                // The lookup also matches decorated names; offer only what the prefix starts.
                if starts_with_ignore_case(bare, prefix) {
                    out.push(format!("{module}!{bare}"));
                }
                if out.len() >= MAX_CANDIDATES * 4 {
                    return out;
                }
            }
        }
        out
    }
}

/// The command names starting with `prefix` (case-insensitive).
fn commands(prefix: &str) -> Vec<String> {
    ntdbg_commands::table::all()
        .flat_map(|c| c.names.iter().copied())
        .chain(REPL_COMMANDS.iter().copied())
        .filter(|n| starts_with_ignore_case(n, prefix))
        .map(str::to_string)
        .collect()
}

/// Whether a word after `before` is a command name: at the start of the line, after `;`, or
/// after a thread prefix (`~2 `, `~* `).
fn at_command_start(before: &str) -> bool {
    let head = before.rsplit(';').next().unwrap_or("").trim();
    head.is_empty()
        || (head.starts_with('~')
            && !head.contains(char::is_whitespace)
            && head[1..].chars().all(|c| c.is_ascii_digit() || c == '*'))
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Candidates {
        Candidates {
            modules: vec![("crashy".into(), None), ("ntdll".into(), None)],
            registers: vec!["rax", "rbx", "rip"],
            threads: 3,
        }
    }

    #[test]
    fn command_names_at_the_start_and_after_separators() {
        let c = sample();
        assert_eq!(c.complete(".ec", 3), (0, vec![".ecxr".to_string()]));
        assert_eq!(c.complete("kb; .ec", 7), (4, vec![".ecxr".to_string()]));
        assert_eq!(c.complete("~1 .ec", 6), (3, vec![".ecxr".to_string()]));
        assert!(c.complete(".log", 4).1.contains(&".logopen".to_string()));
    }

    #[test]
    fn threads_registers_and_modules() {
        let c = sample();
        assert_eq!(c.complete("~", 1).1, vec!["~0", "~1", "~2"]);
        assert_eq!(c.complete("r @ri", 5), (2, vec!["@rip".to_string()]));
        assert_eq!(c.complete("u cr", 4), (2, vec!["crashy!".to_string()]));
        assert_eq!(c.complete("r r", 3).1, vec!["rax", "rbx", "rip"]);
        assert!(c.complete("u ", 2).1.is_empty());
    }

    #[test]
    fn symbols_only_of_loaded_modules() {
        let c = sample();
        assert!(c.complete("x crashy!wri", 12).1.is_empty());
    }

    #[test]
    fn a_dump_session_completes_loaded_symbols_registers_and_threads() {
        let dump = ntdbg_testutil::sample("crashy-x64-null.dmp");
        let mut session = Session::open_dump(&dump, None).expect("the sample opens");
        session.symbols().set_offline(true);
        ntdbg_commands::run_command(&mut session, ".ecxr").expect(".ecxr runs");
        let c = Candidates::of(&session);
        assert_eq!(
            c.complete("x crashy!wri", 12),
            (
                2,
                vec!["crashy!write_dump".into(), "crashy!write_null".into()]
            )
        );
        assert_eq!(c.complete("r ri", 4).1, vec!["rip"]);
        assert_eq!(c.complete("~", 1).1, vec!["~0"]);
    }

    #[test]
    fn non_ascii_input_does_not_panic() {
        let c = sample();
        let line = "é!ü";
        assert!(c.complete(line, line.len()).1.is_empty());
        assert!(c.complete("é", 2).1.is_empty());
    }
}
