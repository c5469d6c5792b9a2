//! `list_dumps` and `open_dump`.

use crate::client::ClientId;
use crate::dto::{
    ListDumpsParams, ListDumpsResult, ModuleBrief, OpenDumpParams, OpenDumpResult, OutputFormat,
    ThreadBrief, TriageDumpsParams,
};
use crate::error::ToolError;
use crate::listing;
use crate::rendered::Rendered;
use crate::report_text::{event_line, frame_text, how_found};
use crate::sessions::DumpIdentity;
use crate::state::{blocking, State};
use crate::state::{busy, BUSY_WAIT};
use crate::symbol_policy;
use ntdbg_analysis::triage::{self, FailedDump, TriageOptions, TriageResult};
use ntdbg_analysis::{Inference, Report};
use ntdbg_engine::{module_name, Session};
use ntdbg_engine::{ErrorCode, Interrupt};
use ntdbg_targets::listing::{find_dump_files, WalkLimits};
use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;

/// Most dumps one `triage_dumps` call analyses (`ntdbg triage` has no limit).
const MAX_TRIAGE_DUMPS: usize = 2000;

/// Analyses every dump of a folder and groups them by crash signature.
pub async fn triage_dumps(
    state: &Arc<State>,
    p: TriageDumpsParams,
    interrupt: Interrupt,
) -> Result<Rendered<TriageResult>, ToolError> {
    let dir = listing::resolve_directory(p.directory.as_deref(), &state.allowed)?;
    // One rule for list_dumps, triage_dumps and `ntdbg list|triage`: subfolders only when asked.
    let recursive = p.recursive;
    let text_only = p.format == OutputFormat::Text;
    let symbols = checked_symbol_path(p.symbols_path, state)?;
    let st = state.clone();
    let base = dir.clone();
    let result = blocking("triaging dumps", move || {
        let limits = WalkLimits::SERVER
            .recursive(recursive)
            .max_dumps(MAX_TRIAGE_DUMPS);
        let found = find_dump_files(&dir, &limits).map_err(|e| {
            ToolError::new(
                ErrorCode::IoError,
                format!("cannot read {}: {e}", dir.display()),
            )
        })?;
        if found.truncated {
            return Err(ToolError::new(
                ErrorCode::TooManyDumps,
                format!(
                    "{} holds more than {MAX_TRIAGE_DUMPS} dumps or {} folder entries: at most \
                     {MAX_TRIAGE_DUMPS} dumps per call",
                    dir.display(),
                    limits.max_entries
                ),
            )
            .with_hint("triage a subfolder, or run `ntdbg triage DIR` from a shell"));
        }
        let files = found.files;
        // Symbolic links may lead out of the allowed directories: those are refused.
        let (inside, outside): (Vec<_>, Vec<_>) = files
            .into_iter()
            .partition(|f| st.allowed.check_existing(f).is_ok());
        let options = TriageOptions {
            recursive,
            offline: st.offline,
            symbols,
            interrupt: interrupt.clone(),
            shared_symbols: Some(st.shared_symbols.clone()),
            ..Default::default()
        };
        let mut result = triage::triage_paths(&inside, &options, &|_, _| {});
        interrupt
            .check()
            .map_err(|e| ToolError::new(ErrorCode::Cancelled, format!("triage {e}")))?;
        result.dumps += outside.len();
        result
            .failed
            .extend(outside.into_iter().map(|f| FailedDump {
                path: f.display().to_string(),
                error: "outside the allowed directories".into(),
            }));
        Ok(result)
    })
    .await?;
    let text = crate::triage_text::triage_text(&result, &base);
    Ok(Rendered::new(result, text).text_only(text_only))
}

/// Lists the dumps of a folder with their header facts.
pub async fn list_dumps(
    state: &Arc<State>,
    p: ListDumpsParams,
) -> Result<Rendered<ListDumpsResult>, ToolError> {
    let dir = listing::resolve_directory(p.directory.as_deref(), &state.allowed)?;
    let text_only = p.format == OutputFormat::Text;
    let st = state.clone();
    let result = blocking("listing dumps", move || {
        listing::list_dumps(&dir, p.recursive, &st.allowed)
    })
    .await?;
    let text = ntdbg_analysis::listing::render_table(&result, Path::new(&result.directory));
    Ok(Rendered::new(result, text).text_only(text_only))
}

/// Opens a dump and returns the first triage: in the session that already has the same file
/// open (same canonical path, size and modification time, and the same symbol path when one is
/// given), unless `new_session` asks for another.
pub async fn open_dump(
    state: &Arc<State>,
    p: OpenDumpParams,
) -> Result<Rendered<OpenDumpResult>, ToolError> {
    // A crash id of the server's crash database, or a path.
    let (path, store_symbols) = match crate::tools::crashes::stored_dump(state, &p.path).await? {
        Some(found) => found,
        None => (state.allowed.check_existing(Path::new(&p.path))?, None),
    };
    let symbols = checked_symbol_path(p.symbols_path.clone(), state)?;
    let symbols = match store_symbols {
        Some(store) => Some(ntdbg_store::store_symbol_path(symbols.as_deref(), &store)),
        None => symbols,
    };
    let identity = DumpIdentity::of(&path).ok();
    let open = identity
        .as_ref()
        .filter(|_| !p.new_session)
        .and_then(|i| state.sessions.find_dump(&ClientId::current(), i))
        .filter(|slot| symbols.is_none() || slot.symbols_path == symbols);
    let (include_modules, include_threads) = (p.include_modules, p.include_threads);
    let reused = open.is_some();
    let (slot, (report, modules, threads)) = match open {
        Some(slot) => {
            let guard = tokio::time::timeout(BUSY_WAIT, slot.session.clone().lock_owned())
                .await
                .map_err(|_| busy(&slot.id))?;
            let triage = blocking("analysing the dump", move || {
                first_triage(&guard, include_modules, include_threads)
            })
            .await?;
            (slot, triage)
        }
        None => {
            let (opened_path, sym, offline) = (path.clone(), symbols.clone(), state.offline);
            let shared = state.shared_symbols.clone();
            let (session, triage) = blocking("opening the dump", move || {
                let session = Session::open_dump(&opened_path, sym.as_deref())?;
                if offline {
                    session.symbols().set_offline(true);
                }
                session.symbols().share(Some(shared));
                let triage = first_triage(&session, include_modules, include_threads)?;
                Ok((session, triage))
            })
            .await?;
            // Registered only once opened and analysed: an open abandoned on the way leaves
            // nothing behind.
            let slot =
                state
                    .sessions
                    .insert_dump(session, path, symbols, identity, ClientId::current());
            tracing::info!(session = %slot.id, "opened a dump");
            (slot, triage)
        }
    };
    let mut next_steps: Vec<String> = report
        .next_commands
        .iter()
        .filter(|c| c.as_str() != ".ecxr")
        .take(3)
        .map(|c| format!("run_command \"{c}\""))
        .collect();
    next_steps.push(format!(
        "analyze_crash(session_id=\"{}\") for the whole report",
        slot.id
    ));
    let mut result = OpenDumpResult {
        session_id: slot.id.clone(),
        reused,
        target: report.dump.path.clone(),
        kind: report.dump.kind.clone(),
        arch: report.dump.arch.clone(),
        os_build: report.dump.os_build.clone(),
        threads: report.dump.threads,
        modules: report.dump.modules,
        event: report.event.clone(),
        headline: event_line(&report),
        inferences: Vec::new(),
        faulting_frame: report.stack.first().cloned(),
        faulting_module: report.faulting_module.clone(),
        signature: report.signature.clone(),
        stack: p.include_stack.then(|| report.stack.clone()),
        module_list: modules,
        thread_list: threads,
        next_steps,
    };
    let text = render_open(&mut result, &report);
    Ok(Rendered::new(result, text))
}

/// What `open_dump` answers besides the session: the analysis, and the module and thread
/// lists when asked for.
type FirstTriage = (Report, Option<Vec<ModuleBrief>>, Option<Vec<ThreadBrief>>);

fn first_triage(session: &Session, modules: bool, threads: bool) -> Result<FirstTriage, ToolError> {
    Ok((
        ntdbg_analysis::analyze_checked(session, &Default::default())?,
        modules.then(|| module_briefs(session)),
        threads.then(|| thread_briefs(session)),
    ))
}

/// A client's symbol path, checked ([`check_symbol_path`]); blank means none.
fn checked_symbol_path(text: Option<String>, state: &State) -> Result<Option<String>, ToolError> {
    let symbols = text.filter(|s| !s.trim().is_empty());
    if let Some(s) = &symbols {
        check_symbol_path(s, state)?;
    }
    Ok(symbols)
}

/// A client's symbol path must keep to the allowed directories and configured servers
/// ([`symbol_policy::check_text`]).
pub(crate) fn check_symbol_path(text: &str, state: &State) -> Result<(), ToolError> {
    symbol_policy::check_text(text, &state.allowed, &state.symbol_servers).map(|_| ())
}

fn module_briefs(session: &Session) -> Vec<ModuleBrief> {
    session
        .target()
        .modules()
        .iter()
        .map(|m| ModuleBrief {
            name: module_name(&m.name),
            base: format!("{:#x}", m.raw.base_of_image),
            size: format!("{:#x}", m.raw.size_of_image),
            image: m.name.to_string(),
        })
        .collect()
}

fn thread_briefs(session: &Session) -> Vec<ThreadBrief> {
    let event = session.event_thread_index();
    session
        .target()
        .threads()
        .iter()
        .enumerate()
        .map(|(index, t)| ThreadBrief {
            index,
            id: format!("{:#x}", t.id),
            name: t.name.clone(),
            event: event == Some(index),
        })
        .collect()
}

/// The most characters of `open_dump`'s text answer, lists asked for with `include_stack`,
/// `include_modules` or `include_threads` aside: the report's conclusions are added, cause
/// first, only while they fit (the cause always, its basis cut to fit when it must).
pub const FIRST_TRIAGE_BUDGET: usize = 2_000;

/// The first triage as text (see [`FIRST_TRIAGE_BUDGET`]); fills `r.inferences` with the
/// conclusions the text carries.
fn render_open(r: &mut OpenDumpResult, report: &Report) -> String {
    let file = Path::new(&r.target)
        .file_name()
        .map(|f| f.to_string_lossy())
        .unwrap_or_default();
    let mut head = format!("{}\n", r.session_id);
    if r.reused {
        head.push_str("(already open: this is the same session; new_session:true opens another)\n");
    }
    let _ = writeln!(
        head,
        "{file}: {} dump, {}, Windows {}, {} thread(s), {} module(s)",
        r.kind, r.arch, r.os_build, r.threads, r.modules
    );
    let _ = writeln!(head, "headline: {}", r.headline);
    let mut tail = String::new();
    if let Some(f) = &r.faulting_frame {
        // Without an event (a hang, a dump taken by hand) frame 0 is where the thread stands.
        let label = if report.event.kind == "none" {
            "current frame"
        } else {
            "faulting frame"
        };
        let _ = writeln!(tail, "{label}: {}", frame_text(f));
    }
    if let Some(m) = &r.faulting_module {
        let version = m
            .version
            .as_deref()
            .map(|v| format!(", version {v}"))
            .unwrap_or_default();
        let _ = writeln!(tail, "faulting module: {} at {}{version}", m.name, m.base);
    }
    let _ = writeln!(tail, "signature: {}", r.signature);
    let _ = writeln!(tail, "next: {}", r.next_steps.join("; "));
    let room = FIRST_TRIAGE_BUDGET.saturating_sub(head.len() + tail.len());
    let (causes, inferences) = conclusions(&report.inferences, room);
    r.inferences = inferences;
    let mut text = head + &causes + &tail;
    lists_text(&mut text, r);
    text
}

/// The report's conclusions as `cause:`/`also:` lines with their basis, in at most `room`
/// characters: the first always (its basis cut to fit, saying where the rest is), each later
/// one only whole. Returns the text and the conclusions it carries.
fn conclusions(all: &[Inference], room: usize) -> (String, Vec<Inference>) {
    let mut text = String::new();
    let mut carried = Vec::new();
    for (i, inference) in all.iter().enumerate() {
        let label = if i == 0 { "cause" } else { "also" };
        let lines = format!(
            "{label}: {}\n  basis: {}\n",
            inference.text, inference.basis
        );
        if text.len() + lines.len() <= room {
            text.push_str(&lines);
            carried.push(inference.clone());
            continue;
        }
        if i == 0 {
            let cut = cut_basis(inference, room);
            text.push_str(&format!("cause: {}\n  basis: {}\n", cut.text, cut.basis));
            carried.push(cut);
        }
        break;
    }
    if carried.len() < all.len() {
        let _ = writeln!(
            text,
            "({} more conclusion(s): analyze_crash)",
            all.len() - carried.len()
        );
    }
    (text, carried)
}

/// `inference` with its basis cut so that its two lines take about `room` characters.
fn cut_basis(inference: &Inference, room: usize) -> Inference {
    const MORE: &str = " ... (analyze_crash has the whole basis)";
    let fixed = "cause: \n  basis: \n".len() + inference.text.len() + MORE.len();
    let keep = crate::text::floor_char(&inference.basis, room.saturating_sub(fixed));
    let mut cut = inference.clone();
    cut.basis = format!("{}{MORE}", &inference.basis[..keep]);
    cut
}

/// The stack, module and thread lists asked for, after the triage.
fn lists_text(text: &mut String, r: &OpenDumpResult) {
    if let Some(stack) = &r.stack {
        text.push_str("stack:\n");
        for f in stack {
            let _ = writeln!(
                text,
                "  {:02} {} ({})",
                f.frame,
                frame_text(f),
                how_found(f)
            );
        }
    }
    if let Some(modules) = &r.module_list {
        let _ = writeln!(
            text,
            "modules: {}",
            modules
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(threads) = &r.thread_list {
        let _ = writeln!(
            text,
            "threads: {}",
            threads
                .iter()
                .map(|t| format!("{}{}", t.id, if t.event { " (event)" } else { "" }))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inference(text: &str, basis: &str) -> Inference {
        Inference::new("null_deref", text, basis)
    }

    #[test]
    fn the_cause_always_comes_and_later_conclusions_only_whole() {
        let all = [
            inference("cause one", "basis one"),
            inference("second", &"x".repeat(500)),
        ];
        let (text, carried) = conclusions(&all, 10_000);
        assert_eq!(carried.len(), 2);
        assert!(text.starts_with("cause: cause one\n  basis: basis one\nalso: second\n"));
        let (text, carried) = conclusions(&all, 100);
        assert_eq!(carried.len(), 1, "{text}");
        assert!(
            text.ends_with("(1 more conclusion(s): analyze_crash)\n"),
            "{text}"
        );
    }

    #[test]
    fn a_cause_too_long_for_the_room_keeps_the_head_of_its_basis() {
        let long = inference("the cause", &"é".repeat(3000));
        let (text, carried) = conclusions(std::slice::from_ref(&long), 600);
        assert_eq!(carried.len(), 1);
        assert!(carried[0]
            .basis
            .ends_with("(analyze_crash has the whole basis)"));
        assert!(text.len() <= 620, "{}", text.len());
        assert!(text.starts_with("cause: the cause\n  basis: éé"));
    }
}
