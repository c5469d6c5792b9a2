//! Entry points over files: user minidumps, kernel dumps and PDBs.

use crate::scratch::with_file;
use ntdbg_commands::run_command;
use ntdbg_engine::Session;
use ntdbg_symbols::{SymbolPath, SymbolStore, TypeDb};
use ntdbg_targets::{KernelDump, Target};

/// The commands run on every dump that opens: the triage an agent starts with.
const DUMP_COMMANDS: &[&str] = &[
    ".lastevent",
    "r",
    "kn",
    "lm",
    "~",
    "db @$ip L40",
    "u @$ip",
    "!analyze -v",
];

/// A session over `target` with an empty symbol path: no file or server is consulted beyond
/// the dump itself.
fn session(target: Box<dyn Target>) -> Session {
    let path = SymbolPath::parse("").expect("the empty symbol path parses");
    Session::new(target, SymbolStore::new(path))
}

/// Runs the triage commands; each may fail, none may panic.
fn triage(session: &mut Session) {
    for command in DUMP_COMMANDS {
        let _ = run_command(session, command);
    }
}

/// Touches what the engine reads from any target: threads, modules, the event and memory
/// around each of them.
fn touch(target: &dyn Target) {
    for thread in target.threads() {
        let _ = target.read_virtual(thread.teb, 16);
        if let Some(stack) = thread.stack {
            let _ = target.read_virtual(stack.base, 16);
        }
    }
    for module in target.modules().iter() {
        let _ = target.read_uint(module.raw.base_of_image, 4);
    }
    if let Some(event) = target.event() {
        let _ = target.read_virtual(event.address, 16);
    }
    let _ = (target.system(), target.bugcheck(), target.arch());
}

/// A dump file of any kind, opened the way `open_dump` does (by signature), then a session
/// on it and the triage commands.
pub fn minidump(data: &[u8]) {
    with_file(data, |path| {
        if let Ok(target) = ntdbg_targets::open(path) {
            touch(target.as_ref());
            triage(&mut session(target));
        }
    })
}

/// A kernel dump: header, physical-memory runs or bitmap, page-table walks, then a session
/// and the triage commands.
pub fn kernel_dump(data: &[u8]) {
    with_file(data, |path| {
        let Ok(dump) = KernelDump::open(path) else {
            return;
        };
        let _ = (dump.header(), dump.triage(), dump.drivers());
        let pages = dump.physical_pages();
        for pfn in [0, 1, pages / 2, pages.saturating_sub(1), pages] {
            let _ = dump.physical_page(pfn);
        }
        for va in [
            0,
            0xffff_f800_0000_0000,
            0xffff_ffff_ffff_f000,
            0x7ff_fffe_0000,
        ] {
            let _ = dump.translate(va);
        }
        touch(&dump);
        triage(&mut session(Box::new(dump)));
    })
}

/// A PDB: converted to Breakpad text as symbol loading does, and its type stream read as
/// `dt` does.
pub fn pdb(data: &[u8]) {
    with_file(data, |path| {
        let _ = ntdbg_symbols::pdb_to_breakpad(path);
        if let Ok(types) = TypeDb::open(path) {
            for name in types.find("*").into_iter().take(16) {
                let _ = types.contains(name);
            }
        }
    })
}
