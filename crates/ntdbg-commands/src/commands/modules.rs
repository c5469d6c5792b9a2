//! Modules: `lm`, `lm m PATTERN`, `lmv`, `lmv m NAME` (also written `lmvm NAME`).

use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, ModuleRow, TypedResult, UnloadedModuleRow};
use crate::render::{addr, windbg_time};
use crate::spec::{CommandSpec, Invocation};
use minidump::MinidumpModule;
use ntdbg_engine::module_info::{file_name_of, file_version, product_version};
use ntdbg_engine::{module_name, Session};
use ntdbg_symbols::wildcard_match;
use ntdbg_targets::UnloadedModule;

pub(crate) const COMMANDS: &[CommandSpec] = &[CommandSpec::inspect(
    &["lm", "lmv", "lmvm", "lmm"],
    "lm [v] [m PATTERN]",
    "list loaded modules with their symbol state; v: verbose (paths, timestamps, versions, symbol search)",
    "PATTERN uses * and ? wildcards on the module name. Modules the process unloaded before the \
     dump was written follow in an `Unloaded modules:` section when the dump records them. The symbol state is WinDbg's: \
     `(deferred)` until something needed the module's symbols (`.reload /f` loads them all), then \
     `(pdb symbols)`, `(breakpad symbols)` or `(no symbols)`. `lmv` loads the symbols of the \
     modules it lists and shows every place the symbol search tried.",
    lm,
)];

fn lm(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let name = inv.name.to_ascii_lowercase();
    let mut verbose = name.starts_with("lmv");
    let mut pattern: Option<String> = None;
    let mut expect_pattern = name.ends_with('m') && name != "lm";
    for word in inv.args.split_whitespace() {
        if expect_pattern {
            pattern = Some(word.to_string());
            expect_pattern = false;
            continue;
        }
        match word {
            "v" => verbose = true,
            "m" => expect_pattern = true,
            "vm" => {
                verbose = true;
                expect_pattern = true;
            }
            other => {
                return Err(CommandError::syntax(format!(
                    "Syntax error in 'lm': unexpected '{}'",
                    excerpt(other)
                ))
                .with_hint("use `lm`, `lmv`, `lm m PATTERN` or `lmv m NAME`"))
            }
        }
    }
    if expect_pattern {
        return Err(CommandError::syntax(
            "Syntax error in 'lm m': missing module pattern",
        ));
    }
    let modules: Vec<&MinidumpModule> = session
        .target()
        .modules()
        .by_addr()
        .filter(|m| {
            pattern
                .as_deref()
                .is_none_or(|p| wildcard_match(p, &module_name(&m.name)))
        })
        .collect();
    if verbose {
        // `lmv` loads what it lists: all at once, so symbol-server downloads overlap.
        session.preload_symbols(&modules);
    }
    let ptr = session.arch().pointer_size();
    let pad = if ptr == 4 { 8 } else { 17 };
    let mut text = format!("{:<pad$} {:<pad$}   module name\n", "start", "end");
    let mut rows = Vec::new();
    for m in modules {
        let base = m.raw.base_of_image;
        // `lm` shows what is loaded without loading (WinDbg's deferred symbols); `lmv` loads,
        // to show the search.
        let symbols = if verbose {
            Some(session.module_symbols(m))
        } else {
            session.symbols().loaded(base)
        };
        let end = base.saturating_add(u64::from(m.raw.size_of_image));
        let short = module_name(&m.name);
        let state = symbols.as_ref().map_or("deferred", |s| s.status().label());
        let file = symbols
            .as_ref()
            .and_then(|s| s.symbol_file_path())
            .map(|p| p.display().to_string());
        text.push_str(&format!(
            "{} {}   {:<10} {:<22} {}\n",
            addr(session, base),
            addr(session, end),
            short,
            format!("({state})"),
            file.clone().unwrap_or_default()
        ));
        let version = file_version(m);
        if let (true, Some(symbols)) = (verbose, &symbols) {
            text.push_str(&format!("    Image path: {}\n", m.name));
            text.push_str(&format!("    Image name: {}\n", file_name_of(&m.name)));
            text.push_str(&format!(
                "    Timestamp:        {} ({:08X})\n",
                windbg_time(m.raw.time_date_stamp),
                m.raw.time_date_stamp
            ));
            text.push_str(&format!("    CheckSum:         {:08X}\n", m.raw.checksum));
            text.push_str(&format!(
                "    ImageSize:        {:08X}\n",
                m.raw.size_of_image
            ));
            if let Some(v) = &version {
                text.push_str(&format!("    File version:     {v}\n"));
            }
            if let Some(v) = product_version(m) {
                text.push_str(&format!("    Product version:  {v}\n"));
            }
            if let Some((pdb, id)) = symbols.pdb_identity() {
                text.push_str(&format!("    Debug file:       {pdb} ({id})\n"));
            }
            if let Some(img) = symbols.image_path() {
                text.push_str(&format!("    Image file:       {}\n", img.display()));
            }
            if !symbols.tried().is_empty() {
                text.push_str("    Symbol search:\n");
                for t in symbols.tried() {
                    text.push_str(&format!("      {t}\n"));
                }
            }
        }
        rows.push(ModuleRow {
            name: short,
            start: format!("{base:#x}"),
            end: format!("{end:#x}"),
            image: m.name.clone(),
            timestamp: format!("{:#010x}", m.raw.time_date_stamp),
            version,
            symbols: symbols
                .as_ref()
                .map_or("deferred", |s| s.status().name())
                .to_string(),
            symbol_file: file,
        });
    }
    let unloaded = unloaded_section(session, pattern.as_deref(), verbose, &mut text);
    if rows.is_empty() && unloaded.is_empty() {
        if let Some(p) = &pattern {
            return Err(CommandError::new(
                ErrorCode::NoSuchModule,
                format!("No module matches '{}'", excerpt(p)),
            )
            .with_hint("`lm` lists every module"));
        }
    }
    Ok(CommandOutput::with(
        text,
        TypedResult::Modules {
            modules: rows,
            unloaded,
        },
    ))
}

/// WinDbg's `Unloaded modules:` section (start, end, file name; `lmv` adds the timestamp,
/// checksum and size), from the dump's UnloadedModuleList. Nothing when the dump has none.
fn unloaded_section(
    session: &Session,
    pattern: Option<&str>,
    verbose: bool,
    text: &mut String,
) -> Vec<UnloadedModuleRow> {
    let unloaded: Vec<&UnloadedModule> = session
        .target()
        .unloaded_modules()
        .iter()
        .filter(|m| pattern.is_none_or(|p| wildcard_match(p, &module_name(&m.name))))
        .collect();
    if unloaded.is_empty() {
        return Vec::new();
    }
    text.push_str("\nUnloaded modules:\n");
    let mut rows = Vec::new();
    for m in unloaded {
        text.push_str(&format!(
            "{} {}   {}\n",
            addr(session, m.base),
            addr(session, m.end()),
            m.name
        ));
        if verbose {
            text.push_str(&format!(
                "    Timestamp: {} ({:08X})\n",
                windbg_time(m.time_date_stamp),
                m.time_date_stamp
            ));
            text.push_str(&format!("    Checksum:  {:08X}\n", m.checksum));
            text.push_str(&format!("    ImageSize:  {:08X}\n", m.size));
        }
        rows.push(UnloadedModuleRow {
            name: m.name.clone(),
            start: format!("{:#x}", m.base),
            end: format!("{:#x}", m.end()),
            timestamp: format!("{:#010x}", m.time_date_stamp),
            checksum: format!("{:#010x}", m.checksum),
        });
    }
    rows
}
