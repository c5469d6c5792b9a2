//! Names of code outside every module from the files a runtime or a crash reporter leaves
//! beside a dump, taken only when they match the dump: Unity's `error.log` (its crashed thread
//! must be the dump's exception thread, and every native frame it lists must lie in the module
//! it names) and a perf map named after the dump's process id (`perf-<pid>.map`).

use std::io::Read;
use std::path::Path;

use ntdbg_symbols::{parse_perf_map, parse_unity_error_log, JitName, JitNames, UnityStack};
use ntdbg_targets::Target;

use crate::symbolize::module_name;

/// The most bytes read from such a file.
const MAX_FILE: u64 = 16 << 20;

/// The names of JIT code that a file beside `dump` gives for `target`, if one matches.
pub(crate) fn beside(dump: &Path, target: &dyn Target) -> Option<JitNames> {
    let folder = dump.parent().filter(|p| !p.as_os_str().is_empty())?;
    let unity = folder.join("error.log");
    if let Some(names) = read_text(&unity)
        .and_then(|text| parse_unity_error_log(&text))
        .and_then(|stack| unity_names(&unity, &stack, target))
    {
        return Some(names);
    }
    let pid = target.system().process_id?;
    let perf = folder.join(format!("perf-{pid}.map"));
    let entries = parse_perf_map(&read_text(&perf)?);
    let names = JitNames::new(
        perf,
        "a perf map",
        [],
        entries.into_iter().map(|(start, size, function)| {
            (
                start,
                start.saturating_add(size),
                JitName {
                    module: None,
                    function,
                },
            )
        }),
    );
    (!names.is_empty()).then_some(names)
}

/// A regular file's text (lossy UTF-8), at most [`MAX_FILE`] bytes of it.
fn read_text(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The JIT frames of a Unity crash stack, when it is this dump's: the crashed thread is the
/// exception's, and each frame naming a loaded module lies inside it (at least one does).
fn unity_names(source: &Path, stack: &UnityStack, target: &dyn Target) -> Option<JitNames> {
    if target.event()?.thread_id != stack.thread_id {
        return None;
    }
    let mut native = 0;
    let mut points = Vec::new();
    for frame in &stack.frames {
        let owner = target.modules().module_at_address(frame.address);
        let named = target
            .modules()
            .iter()
            .find(|m| module_name(&m.name).eq_ignore_ascii_case(&frame.module));
        match (owner, named) {
            (_, Some(module)) => {
                // A native frame: it must be in the module it names.
                if owner.map(|o| o.raw.base_of_image) != Some(module.raw.base_of_image) {
                    return None;
                }
                native += 1;
            }
            (Some(_), None) => {}
            (None, None) => {
                if frame.module.starts_with('<') || frame.function.starts_with('(') {
                    continue;
                }
                points.push((
                    frame.address,
                    JitName {
                        module: Some(frame.module.clone()),
                        function: frame.function.clone(),
                    },
                ));
            }
        }
    }
    let names = JitNames::new(source.to_path_buf(), "Unity's crash log", points, []);
    (native > 0 && !names.is_empty()).then_some(names)
}
