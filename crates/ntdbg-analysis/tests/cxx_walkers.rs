//! The C++ exception structure walkers on built minidumps: MSVC ThrowInfo graphs (x64 RVAs and
//! x86 pointers) and Itanium `__cxa_exception` headers, whole and corrupt. Hostile structures
//! (huge counts, unterminated names, lying string headers, unreadable memory, wrong magic)
//! degrade to a clear reason: never a panic, never an invented name.

use ntdbg_analysis::{analyze, Inference};
use ntdbg_engine::Session;
use ntdbg_testutil::minidump_builder::{Cpu, Exception, MinidumpBuilder, Module};

const APP: u64 = 0x1_4000_0000;
const HEAP: u64 = 0x50_0000;
const MSVC: u32 = 0xE06D_7363;
const GCC: u32 = 0x2047_4343;

/// Memory laid out by a test: `(address, bytes)` pieces.
#[derive(Default)]
struct Layout(Vec<(u64, Vec<u8>)>);

impl Layout {
    fn put(&mut self, at: u64, bytes: &[u8]) -> &mut Self {
        self.0.push((at, bytes.to_vec()));
        self
    }
    fn u32s(&mut self, at: u64, values: &[u32]) -> &mut Self {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.put(at, &bytes)
    }
    fn u64s(&mut self, at: u64, values: &[u64]) -> &mut Self {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.put(at, &bytes)
    }
    fn text(&mut self, at: u64, s: &str) -> &mut Self {
        let mut bytes = s.as_bytes().to_vec();
        bytes.push(0);
        self.put(at, &bytes)
    }
}

/// Analyses a dump with one module (`app.exe` at `APP`), the laid-out memory and the exception.
fn inferences(cpu: Cpu, layout: &Layout, code: u32, parameters: Vec<u64>) -> Vec<Inference> {
    let mut dump = MinidumpBuilder::new(cpu);
    dump.module(Module::new(r"C:\app\app.exe", APP, 0x10000));
    // One range per piece, merged where they touch, so the dump holds exactly these bytes.
    let mut pieces = layout.0.clone();
    pieces.sort_by_key(|(a, _)| *a);
    let mut merged: Vec<(u64, Vec<u8>)> = Vec::new();
    for (at, bytes) in pieces {
        match merged.last_mut() {
            Some((start, prev)) if *start + prev.len() as u64 >= at => {
                let offset = (at - *start) as usize;
                if prev.len() < offset + bytes.len() {
                    prev.resize(offset + bytes.len(), 0);
                }
                prev[offset..offset + bytes.len()].copy_from_slice(&bytes);
            }
            _ => merged.push((at, bytes)),
        }
    }
    for (at, bytes) in merged {
        dump.memory(at, bytes);
    }
    let mut exception = Exception::new(1, code, APP + 0x1000);
    exception.flags = 1;
    exception.parameters = parameters;
    dump.exception(exception);
    let path = ntdbg_testutil::fresh_dir("cxx-walkers").join("thrown.dmp");
    dump.write(&path);
    let session = Session::open_dump(&path, Some("")).expect("the built dump opens");
    session.symbols().set_offline(true);
    let report = analyze(&session);
    let _ = std::fs::remove_file(&path);
    report.inferences
}

fn first(inferences: &[Inference]) -> String {
    let i = inferences.first().expect("an inference");
    format!("{} [{}]", i.text, i.basis)
}

// --- MSVC -----------------------------------------------------------------------------------

/// ThrowInfo at +0x100 → CatchableTypeArray +0x200 (the types' descriptors at +0x400, +0x480,
/// …) for x64: RVAs. `names` are decorated names, most derived first.
fn msvc_x64(names: &[&str]) -> Layout {
    let mut l = Layout::default();
    l.u32s(APP + 0x100, &[0, 0, 0, 0x200]);
    let mut array = vec![names.len() as u32];
    for (i, name) in names.iter().enumerate() {
        let ct = 0x300 + 0x20 * i as u64;
        let td = 0x400 + 0x80 * i as u64;
        array.push(ct as u32);
        l.u32s(APP + ct, &[0, td as u32, 0, u32::MAX, 0, 24, 0]);
        l.u64s(APP + td, &[APP + 0x3000, 0]);
        l.text(APP + td + 16, name);
    }
    l.u32s(APP + 0x200, &array);
    l
}

const DISK_ERROR: [&str; 3] = [
    ".?AVdisk_error@app@@",
    ".?AVruntime_error@std@@",
    ".?AVexception@std@@",
];

#[test]
fn msvc_type_bases_and_message() {
    let mut l = msvc_x64(&DISK_ERROR);
    l.u64s(HEAP, &[APP + 0x3100, APP + 0x800, 0])
        .text(APP + 0x800, "disk full");
    let text = first(&inferences(
        Cpu::X64,
        &l,
        MSVC,
        vec![0x1993_0520, HEAP, APP + 0x100, APP],
    ));
    assert!(
        text.starts_with("uncaught C++ exception app::disk_error: disk full ["),
        "{text}"
    );
    assert!(
        text.contains(
            "CatchableTypeArray of 3 (app::disk_error, std::runtime_error, std::exception)"
        ),
        "{text}"
    );
}

#[test]
fn msvc_message_unavailable_when_the_object_is_missing() {
    let l = msvc_x64(&DISK_ERROR);
    let text = first(&inferences(
        Cpu::X64,
        &l,
        MSVC,
        vec![0x1993_0520, HEAP, APP + 0x100, APP],
    ));
    assert!(
        text.starts_with("uncaught C++ exception app::disk_error: <message unavailable>"),
        "{text}"
    );
    assert!(
        text.contains("the thrown object at 0x500000 is not in the dump"),
        "{text}"
    );
}

#[test]
fn msvc_thrown_scalars_show_their_value() {
    let params = || vec![0x1993_0520, HEAP, APP + 0x100, APP];
    let mut text_ptr = msvc_x64(&[".PEBD"]);
    text_ptr
        .u64s(HEAP, &[APP + 0x800])
        .text(APP + 0x800, "out of cheese");
    let text = first(&inferences(Cpu::X64, &text_ptr, MSVC, params()));
    assert!(
        text.starts_with("uncaught C++ exception char const * (value \"out of cheese\")"),
        "{text}"
    );
    let mut negative = msvc_x64(&[".H"]);
    negative.u32s(HEAP, &[(-7i32) as u32]);
    let text = first(&inferences(Cpu::X64, &negative, MSVC, params()));
    assert!(
        text.starts_with("uncaught C++ exception int (value -7)"),
        "{text}"
    );
    // The value's memory missing: the type alone, no invented value.
    let text = first(&inferences(Cpu::X64, &msvc_x64(&[".H"]), MSVC, params()));
    assert!(text.starts_with("uncaught C++ exception int ["), "{text}");
}

#[test]
fn msvc_image_base_from_the_module_when_the_record_has_none() {
    let l = msvc_x64(&[".?AUconfig_error@app@@"]);
    let text = first(&inferences(
        Cpu::X64,
        &l,
        MSVC,
        vec![0x1993_0520, HEAP, APP + 0x100],
    ));
    assert!(
        text.starts_with("uncaught C++ exception app::config_error ["),
        "{text}"
    );
    assert!(
        text.contains("relative to the module at 0x140000000"),
        "{text}"
    );
}

#[test]
fn msvc_x86_absolute_pointers() {
    const BASE: u64 = 0x40_0000;
    let mut dump_layout = Layout::default();
    let a = |off: u64| (BASE + off) as u32;
    // x86: absolute pointers, TypeDescriptor name after two 4-byte pointers.
    dump_layout
        .u32s(BASE + 0x100, &[0, 0, 0, a(0x200)])
        .u32s(BASE + 0x200, &[1, a(0x300)])
        .u32s(BASE + 0x300, &[0, a(0x400), 0, u32::MAX, 0, 12, 0])
        .u32s(BASE + 0x400, &[a(0x3000), 0])
        .text(BASE + 0x408, ".?AVbad_alloc@std@@");
    // The module sits at APP in `inferences`; x86 needs no module for absolute pointers.
    let text = first(&inferences(
        Cpu::X86,
        &dump_layout,
        MSVC,
        vec![0x1993_0520, 0, BASE + 0x100],
    ));
    assert!(
        text.starts_with("uncaught C++ exception std::bad_alloc"),
        "{text}"
    );
}

#[test]
fn msvc_hostile_structures_degrade_with_a_reason() {
    let params = || vec![0x1993_0520, HEAP, APP + 0x100, APP];
    // A count far beyond any real type hierarchy.
    let mut huge = msvc_x64(&DISK_ERROR);
    huge.u32s(APP + 0x200, &[0x7fff_ffff]);
    // A descriptor name with no NUL within the bound.
    let mut endless = msvc_x64(&["x"]);
    endless.put(APP + 0x410, &[b'A'; 2000]);
    // A catchable type pointing back at the array: the "name" is binary.
    let mut cycle = msvc_x64(&["x"]);
    cycle.u32s(APP + 0x300, &[0, 0x200 - 16]);
    // A name that is not a decorated type.
    let plain = msvc_x64(&["runtime_error"]);
    let cases: Vec<(Layout, Vec<u64>, &str)> = vec![
        (huge, params(), "claims 2147483647 types"),
        (endless, params(), "no string end within 1024 bytes"),
        (cycle, params(), "TypeDescriptor 0x1400001f0"),
        (plain, params(), "holds no decorated type name"),
        (Layout::default(), params(), "is not in the dump or image"),
        (
            msvc_x64(&["x"]),
            vec![0x1234, HEAP, APP + 0x100, APP],
            "not an MSVC throw magic",
        ),
        (
            msvc_x64(&["x"]),
            vec![0x1993_0520, HEAP, 0, APP],
            "no ThrowInfo",
        ),
        (msvc_x64(&["x"]), vec![], "no parameters"),
        (
            msvc_x64(&["x"]),
            vec![0x1993_0520, HEAP, APP + 0x100, u64::MAX - 4],
            "not in the dump or image",
        ),
    ];
    for (layout, params, why) in cases {
        let text = first(&inferences(Cpu::X64, &layout, MSVC, params));
        assert!(
            text.starts_with("uncaught C++ exception of unknown type (MSVC runtime)"),
            "{why}: {text}"
        );
        assert!(text.contains(why), "{why}: {text}");
    }
}

// --- Itanium --------------------------------------------------------------------------------

const UNWIND: u64 = HEAP + 0x100;

/// A libstdc++ exception: header with `exceptionType` 80 bytes before the `_Unwind_Exception`
/// at `UNWIND`, the object after its 64 bytes, a `type_info` at +0x300 named `mangled`, and
/// (for `message`) a copy-on-write string `{length, capacity, refcount}` + characters.
fn itanium(class: &[u8; 8], mangled: &str, message: Option<&str>) -> Layout {
    let mut l = Layout::default();
    l.u64s(UNWIND - 80, &[APP + 0x300]);
    l.put(UNWIND, class);
    l.u64s(APP + 0x300, &[APP + 0x3010, APP + 0x500]);
    l.text(APP + 0x500, mangled);
    let chars = HEAP + 0x400;
    l.u64s(UNWIND + 64, &[APP + 0x3100, chars]);
    if let Some(m) = message {
        l.u64s(chars - 24, &[m.len() as u64, m.len() as u64, 0]);
        l.text(chars, m);
    }
    l
}

const GNU: &[u8; 8] = b"\0++CCUNG";

#[test]
fn itanium_header_type_and_message() {
    let l = itanium(GNU, "St12out_of_range", Some("index 12 is out of range"));
    let text = first(&inferences(Cpu::X64, &l, GCC, vec![UNWIND]));
    assert!(
        text.starts_with("uncaught C++ exception std::out_of_range: index 12 is out of range ["),
        "{text}"
    );
    assert!(text.contains("class GNUCC++"), "{text}");
    assert!(text.contains("string of 24 bytes"), "{text}");
    // libc++abi's class works the same way; a user type has no message to read.
    let l = itanium(b"\0++CGNLC", "N3app5fatalE", None);
    let text = first(&inferences(Cpu::X64, &l, GCC, vec![UNWIND]));
    assert!(
        text.starts_with("uncaught C++ exception app::fatal ["),
        "{text}"
    );
}

#[test]
fn itanium_dependent_exception_leads_to_its_primary() {
    // std::rethrow_exception: a dependent header at HEAP+0x800 whose primaryException is the
    // primary's thrown object (UNWIND + 64).
    let mut l = itanium(GNU, "St13runtime_error", Some("boom"));
    let dependent = HEAP + 0x800;
    l.u64s(dependent - 80, &[UNWIND + 64])
        .put(dependent, b"\x01++CCUNG");
    let text = first(&inferences(Cpu::X64, &l, GCC, vec![dependent]));
    assert!(
        text.starts_with("uncaught C++ exception std::runtime_error: boom ["),
        "{text}"
    );
    assert!(text.contains("is a dependent exception"), "{text}");
    // A dependent header pointing at something that is not a primary exception.
    l.u64s(dependent - 80, &[UNWIND + 128]);
    let text = first(&inferences(Cpu::X64, &l, GCC, vec![dependent]));
    assert!(text.contains("is not a primary exception"), "{text}");
}

#[test]
fn itanium_hostile_headers_degrade_with_a_reason() {
    // A string header whose length exceeds its capacity.
    let mut lying = itanium(GNU, "St13runtime_error", Some("boom"));
    lying.u64s(HEAP + 0x400 - 24, &[1 << 40, 4, 0]);
    // A string header that says 2 bytes where 4 precede the NUL.
    let mut short = itanium(GNU, "St13runtime_error", Some("boom"));
    short.u64s(HEAP + 0x400 - 24, &[2, 4, 0]);
    for (layout, why) in [
        (lying, "is not valid (length 1099511627776"),
        (short, "does not end where its header says"),
        (itanium(GNU, "St13runtime_error", None), "not in the dump"),
    ] {
        let text = first(&inferences(Cpu::X64, &layout, GCC, vec![UNWIND]));
        assert!(
            text.starts_with("uncaught C++ exception std::runtime_error: <message unavailable>"),
            "{why}: {text}"
        );
        assert!(text.contains(why), "{why}: {text}");
    }

    let mut outside = itanium(GNU, "St13runtime_error", None);
    outside.u64s(APP + 0x300, &[0x7777_0000, APP + 0x500]);
    for (layout, params, why) in [
        (
            itanium(b"\0++CCUNH", "i", None),
            vec![UNWIND],
            "not a C++ exception",
        ),
        (
            itanium(GNU, "not a type!", None),
            vec![UNWIND],
            "is not a mangled type",
        ),
        (outside, vec![UNWIND], "outside every module"),
        (
            Layout::default(),
            vec![UNWIND],
            "is not in the dump (libstdc++ allocates it on the heap",
        ),
        (Layout::default(), vec![], "no _Unwind_Exception pointer"),
    ] {
        let text = first(&inferences(Cpu::X64, &layout, GCC, params));
        assert!(
            text.starts_with("uncaught C++ exception of unknown type (GCC/Clang runtime)"),
            "{why}: {text}"
        );
        assert!(text.contains(why), "{why}: {text}");
    }
}
