//! User and machine names read from a dump (or live target), so that they are hidden wherever
//! they appear, not only where a pattern recognises them: the folder of every module under a
//! user profile, and the `USERNAME`, `COMPUTERNAME`, `USERDOMAIN`, `LOGONSERVER` and
//! `USERPROFILE` strings of the process environment block (through the PEB, when the dump
//! holds it) and of each thread's captured stack (where programs copy them).

use super::rules::{profile_name, Category, PROFILE_PATH};
use ntdbg_engine::Session;
use ntdbg_targets::Arch;

/// Stack bytes scanned per session at most.
const STACK_SCAN_LIMIT: u64 = 8 << 20;
/// Environment block bytes read at most.
const ENVIRONMENT_LIMIT: usize = 64 << 10;
/// The shortest name hidden everywhere (shorter ones would hide parts of words).
const MIN_NAME_LEN: usize = 3;

/// The names `session`'s target reveals, each with what it is.
pub fn names(session: &Session) -> Vec<(String, Category)> {
    let mut found = module_names(session);
    let target = session.target();
    if let Some(block) = environment_block(session) {
        environment_names(&utf16(&block), &mut found);
    }
    let mut budget = STACK_SCAN_LIMIT;
    for thread in target.threads() {
        let Some(stack) = &thread.stack else {
            continue;
        };
        let size = stack.size.min(budget);
        budget -= size;
        let Ok(len) = usize::try_from(size) else {
            continue;
        };
        let Some(bytes) = target.read_exact(stack.base, len) else {
            continue;
        };
        environment_names(&utf16(&bytes), &mut found);
        environment_names(&String::from_utf8_lossy(&bytes), &mut found);
    }
    found.retain(|(name, _)| usable(name));
    found.sort();
    found.dedup();
    found
}

/// The user names in the paths of `session`'s modules (all a live target is read for: its
/// memory is not scanned on every call).
pub fn module_names(session: &Session) -> Vec<(String, Category)> {
    let mut found = Vec::new();
    for module in session.target().modules().iter() {
        profile_names(&module.name, &mut found);
    }
    found.retain(|(name, _)| usable(name));
    found
}

/// Account names that name no person and are common words: hidden everywhere, they would
/// turn `user dump` into `<user> dump`.
const GENERIC_ACCOUNTS: &[&str] = &[
    "admin",
    "administrator",
    "guest",
    "root",
    "system",
    "test",
    "user",
    "localservice",
    "networkservice",
    "defaultuser0",
    "wdagutilityaccount",
];

/// Whether a name can be hidden everywhere without touching numbers or common words: long
/// enough, not a hex number itself (a user called `beef` would otherwise hide a part of `dw`
/// output), not a generic account.
fn usable(name: &str) -> bool {
    name.chars().count() >= MIN_NAME_LEN
        && !name.chars().all(|c| c.is_ascii_hexdigit())
        && !GENERIC_ACCOUNTS
            .iter()
            .any(|g| g.eq_ignore_ascii_case(name))
}

/// The user names of profile paths in `text`.
fn profile_names(text: &str, found: &mut Vec<(String, Category)>) {
    for caps in PROFILE_PATH.captures_iter(text) {
        if let Some(name) = caps.name("v").and_then(|m| profile_name(m.as_str())) {
            found.push((name.to_string(), Category::User));
        }
    }
}

/// Names in `KEY=VALUE` environment strings found anywhere in `text`.
fn environment_names(text: &str, found: &mut Vec<(String, Category)>) {
    const KEYS: &[(&str, Option<Category>)] = &[
        ("USERNAME=", Some(Category::User)),
        ("COMPUTERNAME=", Some(Category::Host)),
        ("USERDOMAIN=", Some(Category::Host)),
        ("LOGONSERVER=", Some(Category::Host)),
        ("USERPROFILE=", None),
    ];
    for (key, category) in KEYS {
        for (at, _) in text.match_indices(key) {
            // The key starts a string: at the start or after a NUL / non-name character.
            let starts_string = text[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric() && c != '_');
            if !starts_string {
                continue;
            }
            let value: String = text[at + key.len()..]
                .chars()
                .take_while(|c| !c.is_control() && *c != '\u{fffd}')
                .take(260)
                .collect();
            match category {
                Some(category) => {
                    let value = value.trim_start_matches('\\').trim();
                    if !value.is_empty() {
                        found.push((value.to_string(), *category));
                    }
                }
                // The value has no separator after the name: add one, so that a name with
                // spaces is taken whole.
                None => profile_names(&format!("{value}\\"), found),
            }
        }
    }
}

/// UTF-16LE bytes as text (NULs kept, so strings stay apart).
fn utf16(bytes: &[u8]) -> String {
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16_lossy(&units)
}

/// The process environment block through PEB → ProcessParameters → Environment, as far as
/// the dump holds it.
fn environment_block(session: &Session) -> Option<Vec<u8>> {
    let (params_at, environment_at) = match session.arch() {
        Arch::X86 => (0x10, 0x48),
        _ => (0x20, 0x80),
    };
    let pointer = session.arch().pointer_size();
    let target = session.target();
    let peb = session.peb_address()?;
    let params = target.read_uint(peb.checked_add(params_at)?, pointer)?;
    let environment = target.read_uint(params.checked_add(environment_at)?, pointer)?;
    let mut block = Vec::new();
    while block.len() < ENVIRONMENT_LIMIT {
        let Some(page) = target.read_exact(environment.checked_add(block.len() as u64)?, 4096)
        else {
            break;
        };
        block.extend_from_slice(&page);
        if block.windows(4).any(|w| w == [0, 0, 0, 0]) {
            break;
        }
    }
    (!block.is_empty()).then_some(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_strings_and_profile_paths_name_people_and_machines() {
        let mut found = Vec::new();
        environment_names(
            "\0WINEUSERNAME=root\0USERNAME=zquistberg\0COMPUTERNAME=ZQ-LAPTOP-7731\0LOGONSERVER=\\\\SRV-DC01\0USERPROFILE=C:\\Users\\Zoe Q\0",
            &mut found,
        );
        profile_names(
            r"C:\Users\Public\x.dll C:\Users\alice\AppData\a.dll",
            &mut found,
        );
        found.retain(|(n, _)| usable(n));
        found.sort();
        assert_eq!(
            found,
            vec![
                ("SRV-DC01".to_string(), Category::Host),
                ("ZQ-LAPTOP-7731".to_string(), Category::Host),
                ("Zoe Q".to_string(), Category::User),
                ("alice".to_string(), Category::User),
                ("zquistberg".to_string(), Category::User),
            ]
        );
        assert!(!usable("beef") && !usable("al") && !usable("Administrator") && usable("bob"));
    }
}
