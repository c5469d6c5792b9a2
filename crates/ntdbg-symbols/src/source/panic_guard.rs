//! Containing panics of the third-party readers (`pdb2`, the demanglers, the PE and unwind
//! parsers) on damaged files: a panic inside [`contain`] becomes `None` (or, through
//! [`guarded`], a [`SymbolError::Panicked`] naming the file), and its message is logged at
//! debug level instead of printed on stderr, so one damaged record costs what it covers (a
//! procedure's lines, a module's symbols) and nothing else. Panics anywhere else still reach
//! the process's panic hook as before.

use crate::error::SymbolError;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Once;

thread_local! {
    /// How many [`contain`] calls this thread is inside.
    static CONTAINING: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`; a panic in it is contained: `None`, its message only in the debug log.
pub(crate) fn contain<T>(f: impl FnOnce() -> T) -> Option<T> {
    install_quiet_hook();
    CONTAINING.with(|c| c.set(c.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(f));
    CONTAINING.with(|c| c.set(c.get() - 1));
    result.ok()
}

/// Runs a reader of `path` that might panic on damaged input; a panic becomes
/// [`SymbolError::Panicked`] naming the reader (`what`).
pub(crate) fn guarded<T>(
    path: &Path,
    what: &'static str,
    f: impl FnOnce() -> Result<T, SymbolError>,
) -> Result<T, SymbolError> {
    contain(f).unwrap_or_else(|| {
        Err(SymbolError::Panicked {
            path: path.to_path_buf(),
            what,
        })
    })
}

/// Puts a hook in front of the process's panic hook that keeps contained panics off stderr.
fn install_quiet_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CONTAINING.with(Cell::get) > 0 {
                tracing::debug!("a symbol reader panicked on damaged input (contained): {info}");
            } else {
                previous(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contained_panic_is_none_and_the_thread_goes_on() {
        assert_eq!(contain(|| 7), Some(7));
        assert_eq!(contain(|| -> u32 { panic!("damaged") }), None);
        let nested = contain(|| contain(|| -> u32 { panic!("inner") }).unwrap_or(1) + 1);
        assert_eq!(nested, Some(2));
    }

    #[test]
    fn guarded_names_the_reader_and_the_file() {
        let e = guarded(
            Path::new("x.pdb"),
            "PDB reader",
            || -> Result<(), SymbolError> { panic!("damaged") },
        )
        .unwrap_err();
        assert!(matches!(
            e,
            SymbolError::Panicked {
                what: "PDB reader",
                ..
            }
        ));
    }
}
