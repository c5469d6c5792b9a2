//! Frames in code outside every module (the stack walker follows frame-pointer chains through
//! it back to module code): whose code it is, as far as the dump can say. No module names such
//! code; a runtime that compiles code at run time (Mono, .NET, Java, JavaScript engines) is the
//! usual author, and the process's modules say which runtime was loaded, not that it wrote
//! this code: the inference says which runtime is loaded and words the rest as a hypothesis.

use ntdbg_engine::module_name;
use ntdbg_engine::stack::{FoundBy, Frame};
use ntdbg_engine::Session;

use crate::conclusion::Inference;
use crate::limits::REPORT_FRAMES;

/// Modules (file name without extension, lower case) of runtimes that compile code at run
/// time, and what they are.
const RUNTIMES: &[(&str, &str)] = &[
    ("mono-2.0-bdwgc", "the Mono runtime as Unity embeds it"),
    ("mono-2.0-sgen", "the Mono runtime"),
    ("monosgen-2.0", "the Mono runtime"),
    ("mono", "the Mono runtime"),
    ("coreclr", "the .NET runtime"),
    ("clrjit", "the .NET JIT compiler"),
    ("clr", "the .NET Framework runtime"),
    ("mscorwks", "the .NET Framework 2.0 runtime"),
    ("jvm", "the Java HotSpot VM"),
    ("libcef", "Chromium's V8"),
    ("v8", "the V8 JavaScript engine"),
    ("node", "Node.js's V8"),
    ("xul", "Firefox's SpiderMonkey"),
    ("jscript9", "JScript 9"),
    ("chakra", "the Chakra JavaScript engine"),
    ("lua51", "LuaJIT"),
];

/// An inference about the stack's frames outside every module, if it has any (frame 0 only
/// when the dump holds code at it: an instruction pointer in memory the dump lacks is more
/// likely a jump to a bad address, which the access inferences explain).
pub fn code_outside_modules(session: &Session, frames: &[Frame]) -> Option<Inference> {
    let outside: Vec<&Frame> = frames
        .iter()
        .take(REPORT_FRAMES)
        .filter(|f| !f.inline && f.module_base.is_none())
        .filter(|f| {
            f.found_by != FoundBy::Context
                || session.target().read_chunk(f.instruction, 1).is_some()
        })
        .collect();
    let (first, last) = (outside.first()?, outside.last()?);
    let span = if outside.len() == 1 {
        format!("frame {:02x} is", first.index)
    } else {
        format!(
            "{} frames between {:02x} and {:02x} are",
            outside.len(),
            first.index,
            last.index
        )
    };
    let runtimes: Vec<String> = session
        .target()
        .modules()
        .iter()
        .filter_map(|m| {
            let name = module_name(&m.name).to_ascii_lowercase();
            RUNTIMES
                .iter()
                .find(|(module, _)| *module == name)
                .map(|(_, what)| format!("{what} ({})", module_name(&m.name)))
        })
        .collect();
    let text = match runtimes.as_slice() {
        [] => format!(
            "{span} code outside every module; no runtime known to compile code at run time is loaded, so whose code it is (a JIT's, a packer's, injected) is unknown"
        ),
        [one] => format!(
            "{span} code outside every module; {one} is loaded in the process: probably code it compiled at run time (a hypothesis: no module names this code)"
        ),
        many => format!(
            "{span} code outside every module; runtimes that compile code at run time are loaded ({}): probably code one of them compiled (a hypothesis: no module names this code)",
            many.join(", ")
        ),
    };
    let found: Vec<String> = [
        FoundBy::Context,
        FoundBy::Cfi,
        FoundBy::Leaf,
        FoundBy::FramePointer,
    ]
    .iter()
    .filter_map(|how| {
        let n = outside.iter().filter(|f| f.found_by == *how).count();
        (n > 0).then(|| format!("{} {n}", how.name()))
    })
    .collect();
    let loaded = if runtimes.is_empty() {
        "no known runtime module is loaded".to_string()
    } else {
        format!("module list: {}", runtimes.join(", "))
    };
    let basis = format!(
        "the frames' addresses lie in no module; found by {} (a frame-pointer chain is followed through such code only when it climbs the stack and reaches module code again); {loaded}",
        found.join(", ")
    );
    Some(Inference::new("code_outside_modules", text, basis))
}
