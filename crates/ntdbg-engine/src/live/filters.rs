//! Event filters, WinDbg's `sx` family: for each exception and debug event, whether the
//! debugger breaks, prints a line and goes on, or goes on silently.
//!
//! [`EventFilters::decide`] is the policy, a pure function of the filter table and the event;
//! [`LiveControl`](super::LiveControl) applies it to every stop a resume produces. WinDbg's
//! defaults: exceptions break on first chance, except C++ EH (`e06d7363`) and unknown codes,
//! which break on second chance only; module loads and debug output print and go on; thread
//! creation and exit and module unloads are ignored.

use std::collections::BTreeMap;

use ntdbg_symbols::wildcard_match;

use super::stop_text::is_debug_trap;

/// What the debugger does when an event happens (WinDbg's break status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterAction {
    /// `sxe`: break (on first chance for exceptions).
    Break,
    /// `sxd`: exceptions break on second chance only; the first chance prints a line.
    SecondChance,
    /// `sxn`: print a line and go on.
    Output,
    /// `sxi`: go on without a word.
    Ignore,
}

impl FilterAction {
    /// WinDbg's word for the status in the `sx` listing.
    pub fn name(self) -> &'static str {
        match self {
            FilterAction::Break => "break",
            FilterAction::SecondChance => "second-chance break",
            FilterAction::Output => "output",
            FilterAction::Ignore => "ignore",
        }
    }

    /// The action of a command: `sxe`, `sxd`, `sxn`, `sxi`.
    pub fn from_command(name: &str) -> Option<FilterAction> {
        Some(match name.to_ascii_lowercase().as_str() {
            "sxe" => FilterAction::Break,
            "sxd" => FilterAction::SecondChance,
            "sxn" => FilterAction::Output,
            "sxi" => FilterAction::Ignore,
            _ => return None,
        })
    }
}

/// What a filter is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterTarget {
    /// An exception code.
    Exception(u32),
    /// A debug event that is not an exception.
    Event(EventFilterKind),
}

/// The debug events (not exceptions) that have filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventFilterKind {
    /// `ct`: a thread started.
    CreateThread,
    /// `et`: a thread ended.
    ExitThread,
    /// `epr`: the process ended (always shown: nothing runs after it).
    ExitProcess,
    /// `ld`: a module was loaded.
    LoadModule,
    /// `ud`: a module was unloaded.
    UnloadModule,
    /// `ibp`: the initial breakpoint.
    InitialBreakpoint,
    /// `out`: the program wrote a debug string.
    Output,
}

/// One named filter of WinDbg's table.
#[derive(Debug, Clone, Copy)]
pub struct FilterSpec {
    /// The abbreviation (`av`, `ld`).
    pub abbrev: &'static str,
    /// WinDbg's name (`Access violation`).
    pub name: &'static str,
    /// What it filters.
    pub target: FilterTarget,
    /// WinDbg's default.
    pub default: FilterAction,
}

const fn exception(
    abbrev: &'static str,
    name: &'static str,
    code: u32,
    default: FilterAction,
) -> FilterSpec {
    FilterSpec {
        abbrev,
        name,
        target: FilterTarget::Exception(code),
        default,
    }
}

const fn event(
    abbrev: &'static str,
    name: &'static str,
    kind: EventFilterKind,
    default: FilterAction,
) -> FilterSpec {
    FilterSpec {
        abbrev,
        name,
        target: FilterTarget::Event(kind),
        default,
    }
}

use FilterAction::{Break, Ignore, Output, SecondChance};

/// The named filters, in the order `sx` lists them: events, then exceptions.
pub const FILTERS: &[FilterSpec] = &[
    event("ct", "Create thread", EventFilterKind::CreateThread, Ignore),
    event("et", "Exit thread", EventFilterKind::ExitThread, Ignore),
    event("epr", "Exit process", EventFilterKind::ExitProcess, Break),
    event("ld", "Load module", EventFilterKind::LoadModule, Output),
    event("ud", "Unload module", EventFilterKind::UnloadModule, Ignore),
    event(
        "ibp",
        "Initial breakpoint",
        EventFilterKind::InitialBreakpoint,
        Break,
    ),
    event("out", "Debuggee output", EventFilterKind::Output, Output),
    exception("av", "Access violation", 0xC000_0005, Break),
    exception("asrt", "Assertion failure", 0xC000_0420, Break),
    exception("bpe", "Break instruction exception", 0x8000_0003, Break),
    exception("eh", "C++ EH exception", 0xE06D_7363, SecondChance),
    exception("clr", "CLR exception", 0xE043_4352, SecondChance),
    exception("cce", "Control-C exception", 0x4001_0005, Break),
    exception("dm", "Data misaligned", 0x8000_0002, Break),
    exception("gp", "Guard page violation", 0x8000_0001, Break),
    exception("ii", "Illegal instruction", 0xC000_001D, Break),
    exception("ip", "In-page I/O error", 0xC000_0006, Break),
    exception("dz", "Integer divide-by-zero", 0xC000_0094, Break),
    exception("iov", "Integer overflow", 0xC000_0095, Break),
    exception("ch", "Invalid handle", 0xC000_0008, Break),
    exception(
        "sbo",
        "Security check failure or stack buffer overrun",
        0xC000_0409,
        Break,
    ),
    exception("sov", "Stack overflow", 0xC000_00FD, Break),
    exception("sse", "Single step exception", 0x8000_0004, Break),
    exception("vcpp", "Visual C++ exception", 0x406D_1388, Ignore),
    exception("wob", "WOW64 breakpoint", 0x4000_001F, Break),
    exception("wos", "WOW64 single step exception", 0x4000_001E, Break),
];

/// The default of exceptions no filter names (`*`).
const OTHER_DEFAULT: FilterAction = SecondChance;

/// An event to decide on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterEvent<'a> {
    /// An exception.
    Exception {
        /// Its code.
        code: u32,
        /// First chance (else second).
        first_chance: bool,
    },
    /// A debug event that is not an exception; `module` names the module of a load.
    Event {
        /// Which.
        kind: EventFilterKind,
        /// The loaded module's path, for `sxe ld:NAME`.
        module: Option<&'a str>,
    },
}

/// What the debugger does with one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Stop and show it.
    Break,
    /// Resume at once.
    Continue {
        /// Print (log) the event's line.
        print: bool,
        /// Resume with the exception passed on to the program (`gn`), not handled (`gh`).
        pass: bool,
    },
}

/// The filter table of one live session.
#[derive(Debug, Clone, Default)]
pub struct EventFilters {
    /// Settings changed from the default, by index in [`FILTERS`].
    named: BTreeMap<usize, FilterAction>,
    /// Exceptions set by code (`sxe c0000409` for a code without a name).
    codes: BTreeMap<u32, FilterAction>,
    /// `*`: exceptions no filter names.
    other: Option<FilterAction>,
    /// `sxe ld:NAME`: the module names a load breaks on (wildcards allowed).
    load_names: Vec<String>,
}

/// A filter as `sx` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterSetting {
    /// The abbreviation, or the code in hex for a raw code, or `*`.
    pub abbrev: String,
    /// WinDbg's name.
    pub name: String,
    /// Exception filters: the code.
    pub code: Option<u32>,
    /// The action now.
    pub action: FilterAction,
    /// `ld`: the module names it breaks on.
    pub argument: Option<String>,
}

/// Most `sxe ld:NAME` names kept.
const MAX_LOAD_NAMES: usize = 64;

impl EventFilters {
    /// Sets a filter by the argument of `sxe`/`sxd`/`sxn`/`sxi`: an abbreviation, `ld:NAME`,
    /// `*`, or an exception code in hex (`c0000409`, `0xc0000409`). Returns what was set.
    ///
    /// # Errors
    /// A message when the argument names no filter.
    pub fn set(&mut self, what: &str, action: FilterAction) -> Result<FilterSetting, String> {
        let what = what.trim();
        if what == "*" {
            self.other = Some(action);
            return Ok(self.other_setting());
        }
        let (word, argument) = match what.split_once(':') {
            Some((w, a)) => (w, Some(a.trim())),
            None => (what, None),
        };
        if let Some(index) = FILTERS
            .iter()
            .position(|f| f.abbrev.eq_ignore_ascii_case(word))
        {
            let is_load = FILTERS[index].target == FilterTarget::Event(EventFilterKind::LoadModule);
            match argument {
                Some(_) if !is_load => {
                    return Err(format!("'{word}' takes no argument (only ld:NAME does)"))
                }
                Some("") => return Err("ld: needs a module name (sxe ld:NAME)".into()),
                Some(name) => {
                    if action != Break {
                        return Err("only sxe takes ld:NAME".into());
                    }
                    if !self.load_names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                        if self.load_names.len() >= MAX_LOAD_NAMES {
                            return Err(format!("at most {MAX_LOAD_NAMES} ld: names"));
                        }
                        self.load_names.push(name.to_string());
                    }
                }
                None if is_load => self.load_names.clear(),
                None => {}
            }
            // `sxe ld:NAME` breaks on NAME only: the filter itself keeps printing the others.
            if argument.is_none() {
                self.named.insert(index, action);
            }
            return Ok(self.setting(index));
        }
        if argument.is_some() {
            return Err(format!("unknown event filter '{word}' (sx lists them)"));
        }
        let code = parse_code(word).ok_or_else(|| {
            format!("'{word}' is neither an event filter abbreviation nor an exception code (sx lists them)")
        })?;
        if let Some(index) = FILTERS
            .iter()
            .position(|f| f.target == FilterTarget::Exception(code))
        {
            self.named.insert(index, action);
            return Ok(self.setting(index));
        }
        self.codes.insert(code, action);
        Ok(FilterSetting {
            abbrev: format!("{code:08x}"),
            name: "Exception".into(),
            code: Some(code),
            action,
            argument: None,
        })
    }

    /// Every filter as `sx` lists it: the named ones, the codes set by number, then `*`.
    pub fn list(&self) -> Vec<FilterSetting> {
        let mut out: Vec<FilterSetting> = (0..FILTERS.len()).map(|i| self.setting(i)).collect();
        out.extend(self.codes.iter().map(|(&code, &action)| FilterSetting {
            abbrev: format!("{code:08x}"),
            name: "Exception".into(),
            code: Some(code),
            action,
            argument: None,
        }));
        out.push(self.other_setting());
        out
    }

    fn setting(&self, index: usize) -> FilterSetting {
        let spec = &FILTERS[index];
        let is_load = spec.target == FilterTarget::Event(EventFilterKind::LoadModule);
        FilterSetting {
            abbrev: spec.abbrev.to_string(),
            name: spec.name.to_string(),
            code: match spec.target {
                FilterTarget::Exception(c) => Some(c),
                FilterTarget::Event(_) => None,
            },
            action: self.named.get(&index).copied().unwrap_or(spec.default),
            argument: (is_load && !self.load_names.is_empty()).then(|| self.load_names.join(", ")),
        }
    }

    fn other_setting(&self) -> FilterSetting {
        FilterSetting {
            abbrev: "*".into(),
            name: "Other exception".into(),
            code: None,
            action: self.other.unwrap_or(OTHER_DEFAULT),
            argument: None,
        }
    }

    /// The action for an exception code.
    pub fn exception_action(&self, code: u32) -> FilterAction {
        if let Some(index) = FILTERS
            .iter()
            .position(|f| f.target == FilterTarget::Exception(code))
        {
            return self.setting(index).action;
        }
        self.codes
            .get(&code)
            .copied()
            .or(self.other)
            .unwrap_or(OTHER_DEFAULT)
    }

    /// The action for a debug event that is not an exception.
    pub fn event_action(&self, kind: EventFilterKind) -> FilterAction {
        FILTERS
            .iter()
            .position(|f| f.target == FilterTarget::Event(kind))
            .map_or(Break, |index| self.setting(index).action)
    }

    /// What to do with `event`.
    pub fn decide(&self, event: FilterEvent<'_>) -> Decision {
        match event {
            FilterEvent::Exception { code, first_chance } => {
                // Breakpoints and single steps go on as handled; other exceptions are passed on.
                let pass = !is_debug_trap(code);
                match (self.exception_action(code), first_chance) {
                    (Break, _) | (SecondChance, false) => Decision::Break,
                    (SecondChance | Output, _) => Decision::Continue { print: true, pass },
                    (Ignore, _) => Decision::Continue { print: false, pass },
                }
            }
            FilterEvent::Event { kind, module } => {
                if kind == EventFilterKind::LoadModule
                    && module.is_some_and(|m| self.load_name_matches(m))
                {
                    return Decision::Break;
                }
                match self.event_action(kind) {
                    Break | SecondChance => Decision::Break,
                    Output => Decision::Continue {
                        print: true,
                        pass: false,
                    },
                    Ignore => Decision::Continue {
                        print: false,
                        pass: false,
                    },
                }
            }
        }
    }

    /// Whether a module path matches an `sxe ld:NAME` name: its file name, with or without
    /// the extension, case-insensitively, `*` and `?` as wildcards.
    fn load_name_matches(&self, path: &str) -> bool {
        let file = path.rsplit(['\\', '/']).next().unwrap_or(path);
        let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
        self.load_names
            .iter()
            .any(|n| wildcard_match(n, file) || wildcard_match(n, stem))
    }
}

/// An exception code in hex, with or without `0x` (WinDbg's default radix).
fn parse_code(text: &str) -> Option<u32> {
    let hex = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if hex.is_empty() || hex.len() > 8 {
        return None;
    }
    u32::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exc(code: u32, first_chance: bool) -> FilterEvent<'static> {
        FilterEvent::Exception { code, first_chance }
    }

    fn ev(kind: EventFilterKind) -> FilterEvent<'static> {
        FilterEvent::Event { kind, module: None }
    }

    const PRINT_PASS: Decision = Decision::Continue {
        print: true,
        pass: true,
    };

    #[test]
    fn windbg_defaults() {
        let f = EventFilters::default();
        assert_eq!(f.decide(exc(0xC000_0005, true)), Decision::Break);
        assert_eq!(f.decide(exc(0xC000_0005, false)), Decision::Break);
        // C++ EH and unknown codes: second chance only, the first passes on with a line.
        assert_eq!(f.decide(exc(0xE06D_7363, true)), PRINT_PASS);
        assert_eq!(f.decide(exc(0xE06D_7363, false)), Decision::Break);
        assert_eq!(f.decide(exc(0xE000_1234, true)), PRINT_PASS);
        assert_eq!(f.decide(exc(0xE000_1234, false)), Decision::Break);
        let print_go = Decision::Continue {
            print: true,
            pass: false,
        };
        let quiet_go = Decision::Continue {
            print: false,
            pass: false,
        };
        assert_eq!(f.decide(ev(EventFilterKind::LoadModule)), print_go);
        assert_eq!(f.decide(ev(EventFilterKind::Output)), print_go);
        assert_eq!(f.decide(ev(EventFilterKind::CreateThread)), quiet_go);
        assert_eq!(f.decide(ev(EventFilterKind::ExitThread)), quiet_go);
        assert_eq!(f.decide(ev(EventFilterKind::UnloadModule)), quiet_go);
        assert_eq!(
            f.decide(ev(EventFilterKind::InitialBreakpoint)),
            Decision::Break
        );
    }

    #[test]
    fn sx_commands_change_the_decision() {
        let mut f = EventFilters::default();
        f.set("av", Ignore).unwrap();
        assert_eq!(
            f.decide(exc(0xC000_0005, false)),
            Decision::Continue {
                print: false,
                pass: true
            }
        );
        f.set("AV", SecondChance).unwrap();
        assert_eq!(f.decide(exc(0xC000_0005, true)), PRINT_PASS);
        assert_eq!(f.decide(exc(0xC000_0005, false)), Decision::Break);
        f.set("eh", Break).unwrap();
        assert_eq!(f.decide(exc(0xE06D_7363, true)), Decision::Break);
        // A raw code, with a name (the named filter changes) or without.
        let s = f.set("c0000409", Output).unwrap();
        assert_eq!((s.abbrev.as_str(), s.action), ("sbo", Output));
        let s = f.set("0xe0001234", Break).unwrap();
        assert_eq!(s.abbrev, "e0001234");
        assert_eq!(f.decide(exc(0xE000_1234, true)), Decision::Break);
        f.set("*", Ignore).unwrap();
        assert_eq!(
            f.decide(exc(0xE000_9999, false)),
            Decision::Continue {
                print: false,
                pass: true
            }
        );
        // Breakpoints and single steps go on as handled.
        f.set("bpe", Output).unwrap();
        assert_eq!(
            f.decide(exc(0x8000_0003, true)),
            Decision::Continue {
                print: true,
                pass: false
            }
        );
        f.set("out", Break).unwrap();
        assert_eq!(f.decide(ev(EventFilterKind::Output)), Decision::Break);
        assert!(f.set("zz", Break).is_err());
        assert!(f.set("av:x", Break).is_err());
        assert!(f.set("123456789", Break).is_err());
    }

    #[test]
    fn sxe_ld_name_breaks_on_that_module_only() {
        let mut f = EventFilters::default();
        let s = f.set("ld:version", Break).unwrap();
        assert_eq!(s.action, Output);
        assert_eq!(s.argument.as_deref(), Some("version"));
        let load = |m| FilterEvent::Event {
            kind: EventFilterKind::LoadModule,
            module: Some(m),
        };
        assert_eq!(
            f.decide(load("C:\\windows\\system32\\VERSION.dll")),
            Decision::Break
        );
        assert_eq!(
            f.decide(load("C:\\windows\\system32\\kernel32.dll")),
            Decision::Continue {
                print: true,
                pass: false
            }
        );
        f.set("ld:kernel*.dll", Break).unwrap();
        assert_eq!(
            f.decide(load("C:\\windows\\system32\\kernel32.dll")),
            Decision::Break
        );
        assert!(f.set("ld:", Break).is_err());
        assert!(f.set("ld:x", Ignore).is_err());
        // `sxn ld` forgets the names.
        f.set("ld", Output).unwrap();
        assert_eq!(f.list()[3].argument, None);
        assert_ne!(f.decide(load("x\\version.dll")), Decision::Break);
    }

    #[test]
    fn the_listing_names_every_filter_once() {
        let mut f = EventFilters::default();
        f.set("c0001234", Break).unwrap();
        let list = f.list();
        assert_eq!(list.len(), FILTERS.len() + 2);
        assert_eq!(list.last().unwrap().abbrev, "*");
        assert_eq!(list[FILTERS.len()].abbrev, "c0001234");
        for spec in FILTERS {
            assert_eq!(list.iter().filter(|s| s.abbrev == spec.abbrev).count(), 1);
        }
    }
}
