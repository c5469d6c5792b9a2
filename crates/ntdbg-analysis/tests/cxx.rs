//! Exception kinds no corpus dump has, on a synthetic x64 target: MSVC C++ exceptions (the
//! thrown type read from ThrowInfo in dump memory), GCC/Clang throws, heap corruption,
//! invalid parameter, fast-fail codes.

use ntdbg_analysis::analyze;
use ntdbg_engine::Session;
use ntdbg_symbols::SymbolStore;
use ntdbg_targets::{
    Arch, ExceptionEvent, MemoryRegion, MemoryView, MinidumpModuleList, SystemFacts, Target,
    TargetKind, ThreadInfo,
};
use std::borrow::Cow;

const BASE: u64 = 0x1_4000_0000;

#[derive(Debug)]
struct Synthetic {
    memory: Vec<u8>,
    system: SystemFacts,
    modules: MinidumpModuleList,
    event: ExceptionEvent,
}

impl MemoryView for Synthetic {
    fn read_chunk(&self, addr: u64, max: usize) -> Option<Cow<'_, [u8]>> {
        let at = usize::try_from(addr.checked_sub(BASE)?).ok()?;
        let bytes = self.memory.get(at..)?;
        (!bytes.is_empty()).then(|| Cow::Borrowed(&bytes[..bytes.len().min(max)]))
    }
    fn regions(&self) -> Vec<MemoryRegion> {
        vec![MemoryRegion {
            base: BASE,
            size: self.memory.len() as u64,
        }]
    }
}

impl Target for Synthetic {
    fn kind(&self) -> TargetKind {
        TargetKind::UserDump
    }
    fn arch(&self) -> Arch {
        Arch::X64
    }
    fn system(&self) -> &SystemFacts {
        &self.system
    }
    fn threads(&self) -> &[ThreadInfo] {
        &[]
    }
    fn modules(&self) -> &MinidumpModuleList {
        &self.modules
    }
    fn event(&self) -> Option<&ExceptionEvent> {
        Some(&self.event)
    }
    fn origin(&self) -> &str {
        "synthetic"
    }
}

fn put_u32(mem: &mut [u8], at: usize, v: u32) {
    mem[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// ThrowInfo at RVA 0x100 → CatchableTypeArray 0x200 → CatchableType 0x300 →
/// TypeDescriptor 0x400 named `name`.
fn session(name: &str, with_memory: bool) -> Session {
    session_with(
        name,
        with_memory,
        0xE06D_7363,
        vec![0x1993_0520, BASE + 0x800, BASE + 0x100, BASE],
    )
}

fn session_with(name: &str, with_memory: bool, code: u32, parameters: Vec<u64>) -> Session {
    let mut memory = vec![0u8; 0x1000];
    put_u32(&mut memory, 0x100 + 12, 0x200);
    put_u32(&mut memory, 0x200, 1);
    put_u32(&mut memory, 0x204, 0x300);
    put_u32(&mut memory, 0x304, 0x400);
    memory[0x410..0x410 + name.len()].copy_from_slice(name.as_bytes());
    if !with_memory {
        memory.truncate(0x180);
    }
    let target = Synthetic {
        memory,
        system: SystemFacts::default(),
        modules: MinidumpModuleList::default(),
        event: ExceptionEvent {
            thread_id: 1,
            code,
            flags: 1,
            address: 0x7ff0_0000_1000,
            parameters,
            nested_record: 0,
            context: None,
        },
    };
    Session::new(Box::new(target), SymbolStore::default())
}

fn inference_text(s: &Session) -> String {
    let r = analyze(s);
    assert!(r.signature.starts_with("CPP_EXCEPTION"), "{}", r.signature);
    r.inferences
        .iter()
        .map(|i| format!("{} [{}]", i.text, i.basis))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn names_the_thrown_type() {
    let text = inference_text(&session(".?AVruntime_error@std@@", true));
    assert!(
        text.starts_with("uncaught C++ exception std::runtime_error ["),
        "{text}"
    );
    assert!(text.contains(".?AVruntime_error@std@@"), "{text}");
}

#[test]
fn says_when_the_memory_is_missing() {
    let text = inference_text(&session(".?AVruntime_error@std@@", false));
    assert!(
        text.contains(
            "CatchableTypeArray 0x140000200 is not in the dump or image: thrown type unknown"
        ),
        "{text}"
    );
}

#[test]
fn other_exception_kinds() {
    let cases: &[(u32, Vec<u64>, &str, &str)] = &[
        (0x2047_4343, vec![], "CPP_EXCEPTION", "GCC/Clang"),
        (0xC000_0374, vec![], "HEAP_CORRUPTION", "heap corruption"),
        (
            0xC000_0417,
            vec![],
            "INVALID_PARAMETER",
            "rejected an invalid argument",
        ),
        (0xC000_0409, vec![2], "FAST_FAIL_2", "__fastfail"),
        (0x4000_0015, vec![], "ABORT", "abort() was called"),
        (0xE000_1234, vec![1, 2, 3], "0xE0001234", "RaiseException"),
    ];
    for (code, params, tag, words) in cases {
        let s = session_with("", true, *code, params.clone());
        let r = analyze(&s);
        assert!(r.signature.starts_with(tag), "{code:#x}: {}", r.signature);
        let text = r
            .inferences
            .iter()
            .map(|i| format!("{} [{}]", i.text, i.basis))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(text.contains(words), "{code:#x}: {text}");
    }
    let s = session_with("", true, 0xC000_0409, vec![2]);
    assert!(analyze(&s)
        .event
        .description
        .contains("FAST_FAIL_STACK_COOKIE_CHECK_FAILURE"));
}
