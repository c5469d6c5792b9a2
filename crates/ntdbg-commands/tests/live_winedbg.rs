//! A Windows process under `winedbg --gdb` (Wine, x64): the repository's own crash program
//! (testdata/crashy.exe + crashy.pdb, built by tools/crashgen) is attached, its modules listed
//! from the PEB loader list, broken on a function by symbol, walked with PDB symbols, and run
//! into its access violation. Skipped loudly without Wine. The first run creates a Wine prefix
//! (about 15 s here).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ntdbg_commands::run_command;
use ntdbg_engine::live::{AttachOptions, Chance, RunState, StopCause};
use ntdbg_engine::Session;
use ntdbg_testutil::gdbserver::{host_tool_missing, skip_unless_required};

/// Where Debian's Wine keeps its x64 PE DLLs.
const WINE_PE_DIR: &str = "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows";

/// winedbg and its Wine prefix, shut down on drop.
struct WineDbg {
    child: Child,
    prefix: PathBuf,
}

impl Drop for WineDbg {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = Command::new("wineserver")
            .arg("-k")
            .env("WINEPREFIX", &self.prefix)
            .status();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

#[test]
fn winedbg_attach_modules_symbol_breakpoint_stack_and_crash() {
    if let Some(why) = host_tool_missing("winedbg").or_else(|| host_tool_missing("wineserver")) {
        skip_unless_required(
            "NTDBG_REQUIRE_WINEDBG",
            "winedbg tier",
            &format!("{why} (apt-get install -y wine wine64)"),
        );
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("winedbg-tier");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["crashy.exe", "crashy.pdb"] {
        std::fs::copy(ntdbg_testutil::sample(f), dir.join(f)).unwrap();
    }
    let prefix = dir.join("prefix");
    let port = free_port();
    let t = Instant::now();
    let child = Command::new("winedbg")
        .args(["--gdb", "--no-start", "--port", &port.to_string()])
        .args(["crashy.exe", "null", "C:\\ntdbg-test.dmp"])
        .current_dir(&dir)
        .env("WINEPREFIX", &prefix)
        .env("WINEDEBUG", "-all")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("winedbg starts");
    let _wine = WineDbg { child, prefix };

    // winedbg listens once Wine is up (longer the first time, while the prefix is made).
    let opts = AttachOptions {
        timeout: Duration::from_secs(20),
        read_only: false,
    };
    let target = format!("gdb:127.0.0.1:{port}");
    // Wine's own PE files: unwind data and exports of ntdll/kernel32 from disk instead of
    // ~5 MB of images read over the (slow) winedbg connection.
    let mut sympath = dir.display().to_string();
    let wine_pe = std::path::Path::new(WINE_PE_DIR);
    if wine_pe.is_dir() {
        sympath = format!("{sympath};{WINE_PE_DIR}");
    }
    let mut s = loop {
        match Session::attach(&target, Some(&sympath), &opts) {
            Ok(s) => break s,
            Err(e) if e.code() == "connect_failed" && t.elapsed() < Duration::from_secs(120) => {
                std::thread::sleep(Duration::from_millis(250));
            }
            Err(e) => panic!("attach: {e}"),
        }
    };
    eprintln!("winedbg up and attached: {:?}", t.elapsed());
    s.live().unwrap().set_command_wait(Duration::from_secs(60));
    let mut run = |line: &str| {
        let t = Instant::now();
        let out = run_command(&mut s, line).unwrap_or_else(|e| panic!("{line}: {e}"));
        eprintln!("{line}: {:?}", t.elapsed());
        out.text
    };

    let lm = run("lm");
    assert!(lm.contains("crashy"), "{lm}");
    assert!(lm.contains("ntdll"), "{lm}");
    run("bp crashy!write_null");
    assert!(run("bl").contains("crashy!write_null"));
    let hit = run("g");
    assert!(
        hit.starts_with("Breakpoint 0 hit\ncrashy!write_null:\n"),
        "{hit}"
    );
    assert!(
        !hit.contains("int     3"),
        "the debugger's int3 is hidden: {hit}"
    );
    let k = run("k");
    assert!(k.contains("crashy!mode_null"), "{k}");
    assert!(k.contains("crashy.c @ "), "PDB line numbers: {k}");
    let crash = run("g");
    assert!(
        crash.contains("Access violation - code c0000005 (first chance)"),
        "{crash}"
    );
    let live = s.live().unwrap().clone();
    let RunState::Halted(h) = live.state() else {
        panic!("{:?}", live.state())
    };
    assert_eq!(
        h.cause,
        StopCause::Exception {
            code: 0xC000_0005,
            chance: Chance::First
        }
    );
    assert!(
        s.trailer().contains("crashy!write_null+0x"),
        "{}",
        s.trailer()
    );
    let t = Instant::now();
    live.close(Duration::from_secs(10)).unwrap();
    eprintln!("close: {:?}", t.elapsed());
}
