//! Hangs and deadlocks on the repository's `hang` samples (tools/crashgen/samples/hang.c).

use ntdbg_analysis::hang::wait_chain::thread_waits;
use ntdbg_engine::Session;
use std::path::Path;

/// Wine's own DLLs, whose export tables and unwind data name and unwind ntdll's frames.
const WINE_DLLS: &str = "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows";

fn open(rel: &str, with_wine: bool) -> Session {
    let path = ntdbg_testutil::sample(rel);
    let mut dir = path.parent().unwrap_or(Path::new(".")).display().to_string();
    if with_wine {
        dir = format!("{dir};{WINE_DLLS}");
    }
    Session::open_dump(&path, Some(&dir)).expect("sample opens")
}

#[test]
fn explore() {
    let session = open("hang/deadlock.dmp", true);
    for i in 0..session.target().threads().len() {
        let s = session.thread_stack(i).unwrap();
        for f in &s.frames {
            let regs: Vec<String> = ["rbx", "rbp", "rsi", "rdi", "r12", "r13", "r14", "r15"]
                .iter()
                .filter_map(|r| f.register(r).map(|v| format!("{r}={v:x}")))
                .collect();
            eprintln!("{i} {} {} {}", f.index, f.call_site(), regs.join(" "));
        }
    }
    for w in thread_waits(&session) {
        eprintln!("{w:?}");
    }
}
