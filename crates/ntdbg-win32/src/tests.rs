//! The stub's protocol side against ntdbg's own GDB client, with a scripted backend.

use std::collections::BTreeMap;
use std::time::Duration;

use ntdbg_gdbremote::{BreakpointKind, ClientOptions, GdbClient, ResumeAction, StopReply};

use crate::backend::{
    signal, Backend, BreakType, DumpKind, EventKind, ExceptionInfo, Halt, Hit, Registers, Resume,
    Stop, GS_BASE, RIP,
};
use crate::link::serve_on_loopback;
use crate::server::{stop_packet, Action, Server};

const TID: u32 = 0x2b0;
const PID: u32 = 0x1a4;

/// A process with one thread, 0x100 bytes of memory at 0x1000, and a script of stops.
#[derive(Debug)]
struct Fake {
    halt: Halt,
    regs: Registers,
    memory: Vec<u8>,
    breakpoints: BTreeMap<u64, BreakType>,
    script: Vec<Halt>,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Fake {
    fn new(log: std::sync::Arc<std::sync::Mutex<Vec<String>>>) -> Fake {
        let mut regs = Registers::default();
        regs.0[RIP] = 0x1010;
        regs.0[GS_BASE] = 0x7ff0_0000;
        Fake {
            halt: Halt::Stopped(Stop::event(TID, EventKind::InitialBreakpoint)),
            regs,
            memory: (0..0x100u32).map(|i| i as u8).collect(),
            breakpoints: BTreeMap::new(),
            script: Vec::new(),
            log,
        }
    }
    fn note(&self, what: String) {
        self.log.lock().unwrap().push(what);
    }
}

impl Backend for Fake {
    fn pid(&self) -> u32 {
        PID
    }
    fn halt(&self) -> &Halt {
        &self.halt
    }
    fn threads(&self) -> Vec<u32> {
        vec![TID]
    }
    fn read_registers(&mut self, tid: u32) -> Result<Registers, String> {
        (tid == TID)
            .then_some(self.regs)
            .ok_or("no such thread".into())
    }
    fn write_registers(&mut self, _tid: u32, regs: &Registers) -> Result<(), String> {
        self.regs = *regs;
        Ok(())
    }
    fn read_memory(&mut self, addr: u64, len: usize) -> Vec<u8> {
        let Some(start) = addr.checked_sub(0x1000).map(|s| s as usize) else {
            return Vec::new();
        };
        self.memory
            .get(start.min(self.memory.len())..(start + len).min(self.memory.len()))
            .unwrap_or_default()
            .to_vec()
    }
    fn write_memory(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        let start = addr.checked_sub(0x1000).ok_or("unmapped")? as usize;
        let slot = self
            .memory
            .get_mut(start..start + data.len())
            .ok_or("unmapped")?;
        slot.copy_from_slice(data);
        Ok(())
    }
    fn insert_breakpoint(&mut self, kind: BreakType, addr: u64, _len: u64) -> Result<(), String> {
        self.breakpoints.insert(addr, kind);
        Ok(())
    }
    fn remove_breakpoint(&mut self, _kind: BreakType, addr: u64, _len: u64) -> Result<(), String> {
        self.breakpoints
            .remove(&addr)
            .map(|_| ())
            .ok_or("none".into())
    }
    fn resume(&mut self, how: Resume) -> Result<(), String> {
        self.note(format!("resume {how:?}"));
        Ok(())
    }
    fn wait(&mut self, _wait: Duration) -> Result<Option<Halt>, String> {
        if self.script.is_empty() {
            return Ok(None);
        }
        self.halt = self.script.remove(0);
        Ok(Some(self.halt.clone()))
    }
    fn interrupt(&mut self) -> Result<(), String> {
        self.note("interrupt".into());
        let mut stop = Stop::event(TID, EventKind::Exception);
        stop.signal = signal::INT;
        self.script.push(Halt::Stopped(stop));
        Ok(())
    }
    fn detach(&mut self, leave_suspended: bool) -> Result<(), String> {
        self.note(format!("detach suspended={leave_suspended}"));
        Ok(())
    }
    fn kill(&mut self) -> Result<(), String> {
        self.note("kill".into());
        Ok(())
    }
    fn write_dump(&mut self, kind: DumpKind, path: &str) -> Result<(), String> {
        self.note(format!("dump {kind:?} {path}"));
        Ok(())
    }
    fn teb(&self, _tid: u32) -> Option<u64> {
        Some(0x7ff0_0000)
    }
}

fn av() -> Halt {
    Halt::Stopped(Stop {
        signal: signal::SEGV,
        tid: TID,
        event: EventKind::Exception,
        hit: None,
        exception: Some(ExceptionInfo {
            code: 0xc000_0005,
            first_chance: true,
            address: 0x1010,
            params: vec![1, 0],
        }),
        module: None,
        text: None,
    })
}

fn connect(script: Vec<Halt>) -> (GdbClient, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let l2 = log.clone();
    let stream = serve_on_loopback(
        move || {
            let mut f = Fake::new(l2);
            f.script = script;
            Ok(f)
        },
        Duration::from_secs(5),
    )
    .unwrap();
    (
        GdbClient::handshake(stream, ClientOptions::default()).unwrap(),
        log,
    )
}

#[test]
fn stop_packets_carry_windows_facts() {
    let t = String::from_utf8(stop_packet(PID, &av())).unwrap();
    assert_eq!(
        t,
        "T0bthread:p1a4.2b0;ntdbg-event:exception;ntdbg-exc:c0000005;ntdbg-chance:1;\
         ntdbg-excaddr:1010;ntdbg-excparams:1,0;"
    );
    let mut load = Stop::event(TID, EventKind::Load);
    load.module = Some((0x7ff8_0000_0000, "C:\\a.dll".into()));
    let t = String::from_utf8(stop_packet(PID, &Halt::Stopped(load))).unwrap();
    assert!(t.starts_with("T05thread:p1a4.2b0;ntdbg-event:load;ntdbg-module:7ff800000000;"));
    assert!(t.ends_with("ntdbg-name:433a5c612e646c6c;"), "{t}");
    let mut bp = Stop::event(TID, EventKind::Exception);
    bp.hit = Some(Hit::Write(0x1020));
    let t = String::from_utf8(stop_packet(PID, &Halt::Stopped(bp))).unwrap();
    assert!(t.ends_with("ntdbg-event:exception;watch:1020;"), "{t}");
    let StopReply::Signal { signal, reason, .. } = StopReply::parse(t.as_bytes()).unwrap() else {
        panic!("{t}")
    };
    assert_eq!(
        (signal, reason),
        (
            signal::TRAP,
            Some(ntdbg_gdbremote::StopReason::Watch(0x1020))
        )
    );
    assert_eq!(
        stop_packet(PID, &Halt::Exited(0xc000_0005)),
        b"Wc0000005;process:1a4"
    );
    // The standard parser reads the T packets (it skips the unknown pairs).
    let parsed = StopReply::parse(&stop_packet(PID, &av())).unwrap();
    assert_eq!(parsed.signal(), Some(signal::SEGV));
}

#[test]
fn client_handshake_registers_memory_and_breakpoints() {
    let (mut c, log) = connect(vec![av()]);
    let layout = c.register_layout().unwrap();
    assert_eq!(layout.architecture.as_deref(), Some("i386:x86-64"));
    let g = c.read_registers().unwrap();
    assert_eq!(layout.value_u64("rip", &g), Some(0x1010));
    assert_eq!(layout.value_u64("gs_base", &g), Some(0x7ff0_0000));
    let ctx = ntdbg_targets::gdb_target::amd64_context(&layout, &g).unwrap();
    assert_eq!(ctx.get_instruction_pointer(), 0x1010);
    c.write_register(
        layout.by_name("rip").unwrap().regnum,
        &0x1011u64.to_le_bytes(),
    )
    .unwrap();
    let g = c.read_registers().unwrap();
    assert_eq!(layout.value_u64("rip", &g), Some(0x1011));
    // Memory: a read that runs off the end gives holes, not invented bytes.
    let m = c.read_memory(0x10f0, 0x20).unwrap();
    assert_eq!(m[0], Some(0xf0));
    assert!(m[0x10..].iter().all(Option::is_none));
    c.write_memory(0x1000, &[0xaa, 0xbb]).unwrap();
    assert_eq!(
        c.read_memory(0x1000, 2).unwrap(),
        vec![Some(0xaa), Some(0xbb)]
    );
    assert_eq!(
        c.insert_breakpoint(BreakpointKind::Software, 0x1020, 1)
            .unwrap(),
        ntdbg_gdbremote::BreakpointMethod::Stub
    );
    c.insert_breakpoint(BreakpointKind::WriteWatch, 0x1040, 4)
        .unwrap();
    c.remove_breakpoint(BreakpointKind::Software, 0x1020, 1)
        .unwrap();
    assert_eq!(c.threads().unwrap().len(), 1);
    let first = c.threads().unwrap()[0];
    assert_eq!(c.tib_address(first).unwrap(), Some(0x7ff0_0000));
    // Run: the scripted access violation arrives as the stop.
    c.resume(ResumeAction::Continue, None).unwrap();
    let stop = c.wait_stop(Duration::from_secs(5)).unwrap().unwrap();
    assert_eq!(stop.signal(), Some(signal::SEGV));
    // Pass it on (gn): `C`.
    c.resume(ResumeAction::ContinueWithSignal(signal::SEGV), None)
        .unwrap();
    let stop = c.break_in().unwrap();
    assert_eq!(stop.signal(), Some(signal::INT));
    // Custom packets.
    let hex = ntdbg_gdbremote::packet::to_hex(b"C:\\d\\x.dmp");
    assert_eq!(
        c.request(format!("Qntdbg.dump:ma,{hex}").as_bytes())
            .unwrap(),
        b"OK"
    );
    assert!(c.request(b"Qntdbg.dump:zz,00").unwrap().starts_with(b"E."));
    assert_eq!(c.request(b"Qntdbg.detach-suspended:1").unwrap(), b"OK");
    assert_eq!(c.request(b"Qunknown").unwrap(), b"");
    c.detach().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            "resume Resume { step: None, pass_exception: false }",
            "resume Resume { step: None, pass_exception: true }",
            "interrupt",
            "dump Full C:\\d\\x.dmp",
            "detach suspended=true",
        ]
    );
}

#[test]
fn a_client_that_vanishes_detaches() {
    let (c, log) = connect(Vec::new());
    // Dropping the client sends `D` (it detaches); closing without it must detach too.
    drop(c);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(log.lock().unwrap().as_slice(), ["detach suspended=false"]);
}

#[test]
fn exit_is_reported_with_the_full_code() {
    let (mut c, _log) = connect(vec![Halt::Exited(0xc000_0005)]);
    c.resume(ResumeAction::Continue, None).unwrap();
    // The client may not know 32-bit exit codes; either it parses the `W` or it sees the
    // connection end — it never hangs.
    match c.wait_stop(Duration::from_secs(5)) {
        Ok(Some(stop)) => assert!(stop.is_exit()),
        Ok(None) => panic!("no stop"),
        Err(_) => {}
    }
}

/// Hostile packets get replies, never a panic.
#[test]
fn hostile_packets() {
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut s = Server::new(Fake::new(log));
    for p in [
        &b""[..],
        b"g",
        b"G",
        b"Gzz",
        b"p",
        b"p1000",
        b"pffffffffffffffffff",
        b"P10=",
        b"P10=zz",
        b"P10=0102",
        b"m",
        b"m,",
        b"mffffffffffffffff,ffffffffffffffff",
        b"m1000,ffffffff",
        b"M1000,2:zz",
        b"M1000,1000000:00",
        b"Z",
        b"Z9,1,1",
        b"Z0,zz,1",
        b"z0,1000,1",
        b"H",
        b"Hgzz",
        b"Hg99",
        b"T",
        b"c1234",
        b"Czz",
        b"vCont;",
        b"vCont;x",
        b"vCont;Szz",
        b"qXfer:features:read:target.xml:ffffffffffffffff,10",
        b"qXfer:features:read:other.xml:0,10",
        b"qXfer:features:read:",
        b"qGetTIBAddr:zz",
        b"Qntdbg.dump:",
        b"Qntdbg.dump:ma,zz",
        b"\xff\xfe",
    ] {
        let r = s.handle(p);
        assert!(
            matches!(r, Action::Reply(_)),
            "{:?}: {r:?}",
            String::from_utf8_lossy(p)
        );
    }
}
