//! Building the report from a session: the exception path here, the bugcheck path in
//! [`crate::bugcheck`], the conclusions in `inference`.

use crate::exception::{decode, ExceptionKind};
use crate::report::{
    frame_limitations, module_facts, stack_entry, DumpFacts, EventFacts, Inference, Report,
    StackEntry, REPORT_FRAMES,
};
use crate::signature::{build_signature, kind_tag, SignatureConfig};
use ntdbg_engine::stack::{Frame, Stack};
use ntdbg_engine::text::prefixed_pointer_hex;
use ntdbg_engine::{module_name, EngineError, Session};

/// Analyses the session's last event. Never fails: what cannot be known becomes a limitation.
/// When symbols may be downloaded, the event stack's modules load in parallel first, so every
/// front end (CLI, `!analyze`, MCP) gets overlapping downloads.
pub fn analyze(session: &Session) -> Report {
    analyze_with(session, &SignatureConfig::default())
}

/// [`analyze_with`], then the session's files checked ([`Session::check_files`]): a report
/// read from a dump or symbol file that changed on disk meanwhile is replaced by the error
/// saying so.
pub fn analyze_checked(session: &Session, config: &SignatureConfig) -> Result<Report, EngineError> {
    let report = analyze_with(session, config);
    session.check_files()?;
    Ok(report)
}

/// [`analyze`] with a chosen signature configuration (which modules count as system).
pub fn analyze_with(session: &Session, config: &SignatureConfig) -> Report {
    session.preload_event_stack_symbols();
    let target = session.target();
    let ptr = target.arch().pointer_size();
    let hex = |v: u64| format!("{v:#x}");
    let mut limitations = target.file_losses().to_vec();

    let live = target.kind() == ntdbg_targets::TargetKind::Live;
    let dump = DumpFacts {
        path: target.origin().to_string(),
        kind: target.kind().name().to_string(),
        arch: target.arch().name().to_string(),
        os_build: target.system().os_version.clone(),
        modules: target.modules().iter().count(),
        threads: target.threads().len(),
        process_name: process_name(session),
    };

    if let Some(bugcheck) = target.bugcheck() {
        return crate::bugcheck::bugcheck_report(session, bugcheck, dump, config);
    }

    // `access`: the exception kind with a general-protection fault's access taken from the
    // faulting instruction (its record says read whatever happened).
    let (event, decoded, access) = match target.event() {
        Some(e) => {
            let d = decode(e, ptr);
            let access = crate::fault::access_from_instruction(session, e, &d.kind);
            let facts = EventFacts {
                kind: "exception".into(),
                code: Some(format!("{:#010x}", e.code)),
                name: Some(d.name.clone()),
                address: Some(prefixed_pointer_hex(e.address, ptr)),
                thread_id: Some(hex(u64::from(e.thread_id))),
                parameters: e.parameters.iter().map(|p| hex(*p)).collect(),
                description: general_protection_write(&d.kind, &access)
                    .unwrap_or_else(|| d.description.clone()),
            };
            (facts, Some((e, d)), Some(access))
        }
        None => {
            let (limitation, description) = if live {
                (
                    "the live target's current stop is no exception: no crash event to analyse",
                    "no exception at the current stop",
                )
            } else if target.file_losses().is_empty() {
                (
                    "the dump has no exception stream: no crash event to analyse",
                    "no exception recorded in the dump",
                )
            } else {
                (
                    "no exception record in the part of the file that is left: no crash event to analyse",
                    ntdbg_targets::listing::NO_EXCEPTION_LEFT,
                )
            };
            limitations.push(limitation.into());
            let facts = EventFacts {
                kind: "none".into(),
                code: None,
                name: None,
                address: None,
                thread_id: None,
                parameters: Vec::new(),
                description: description.into(),
            };
            (facts, None, None)
        }
    };

    let faulting_module = decoded
        .as_ref()
        .and_then(|(e, _)| session.module_at(e.address))
        .map(module_facts);

    let walked: Option<Stack> = match session.event_stack() {
        Ok(stack) => {
            if let Some(note) = &stack.note {
                limitations.push(note.clone());
            }
            Some(stack)
        }
        Err(err) => match session.current_thread().map(|_| session.stack()) {
            Some(Ok(stack)) => {
                limitations.push(format!("{err}; showing the current thread's own stack"));
                Some(stack)
            }
            _ => {
                limitations.push(err.to_string());
                None
            }
        },
    };
    let frame_locals = walked
        .as_ref()
        .map(|s| crate::frame_locals::frame_locals(session, s, config))
        .unwrap_or_default();
    let app_frame = walked
        .as_ref()
        .and_then(|s| crate::frame_locals::first_application_frame(s, config));
    let frames: Vec<Frame> = walked.map(|s| s.frames).unwrap_or_default();
    limitations.extend(frame_limitations(session, &frames));
    if let Some(f) = app_frame
        .and_then(|n| frames.get(n))
        .filter(|f| !crate::frame_locals::locals_are_sure(f))
    {
        limitations.push(format!(
            "frame {:02x} ({}, {}) may not be a real frame: its locals are not shown",
            f.index,
            f.found_by.name(),
            f.trust.name()
        ));
    }

    let stack: Vec<StackEntry> = frames.iter().take(REPORT_FRAMES).map(stack_entry).collect();
    let (inferences, waits) = match &decoded {
        Some((e, d)) => (crate::inference::infer(session, e, d, &frames), Vec::new()),
        None => {
            let (inferences, waits, notes) = crate::hang::analyze_hang(session);
            limitations.extend(notes);
            (inferences, waits)
        }
    };
    let pointed_to = decoded
        .as_ref()
        .map(|(e, _)| crate::evidence::pointed::pointed_values(session, e))
        .unwrap_or_default()
        .iter()
        .map(|p| p.report())
        .collect();
    let tag = match (&decoded, &access) {
        (Some((e, _)), Some(access)) => kind_tag(access, e.code),
        _ => no_exception_tag(&inferences, live).into(),
    };
    let signature = build_signature(&tag, &frames, config);
    // Without an exception there is no context to restore: what the threads wait on comes first.
    let mut next_commands: Vec<String> = match &decoded {
        Some(_) => vec![".ecxr".into(), "kb".into()],
        None => vec!["!waits".into(), "!locks".into(), "kb".into()],
    };
    if let Some(m) = &faulting_module {
        next_commands.push(format!("lmv m {}", module_name(&m.name)));
    }
    if let Some((e, _)) = &decoded {
        next_commands.push(format!("u {:#x}", e.address));
        match decode(e, ptr).kind {
            ExceptionKind::StackOverflow => next_commands.push("kn 100".into()),
            ExceptionKind::AccessViolation { .. } => {
                next_commands.push("r".into());
                if crate::fault::faulting_instruction(session, e).is_some() {
                    next_commands.push(format!("ub {:#x} L8", e.address));
                }
            }
            ExceptionKind::CppException if e.parameters.len() > 1 => {
                next_commands.push(format!("dps {:#x} L4", e.parameters[1]));
            }
            _ => {}
        }
    }
    if let Some(n) = app_frame.filter(|n| frame_locals.iter().any(|l| l.frame == *n)) {
        next_commands.push(format!(".frame {n:x}; dv /t"));
    }
    next_commands.push("~*k".into());

    Report {
        version: crate::report::REPORT_VERSION,
        dump,
        event,
        faulting_module,
        stack,
        signature: signature.text,
        signature_frames: signature.frames,
        frame_locals,
        inferences,
        pointed_to,
        waits,
        limitations,
        next_commands,
    }
}

/// The event of a general-protection fault whose instruction writes (`recorded` is the kind
/// the record gives, `decided` the one the instruction gives): its record says "read from
/// 0xffffffffffffffff" whatever the access was, so the record's words would state a read that
/// did not happen. `None` for any other event.
fn general_protection_write(
    recorded: &crate::exception::ExceptionKind,
    decided: &crate::exception::ExceptionKind,
) -> Option<String> {
    use crate::exception::{Access, ExceptionKind};
    let writes = |k: &ExceptionKind| {
        matches!(
            k,
            ExceptionKind::AccessViolation {
                access: Some(Access::Write),
                ..
            }
        )
    };
    (writes(decided) && !writes(recorded)).then(|| {
        "write that raised a general-protection fault (the record says read from \
         0xffffffffffffffff for any such fault; the faulting instruction writes)"
            .to_string()
    })
}

/// The process a dump is of: a kernel dump's current process (from its EPROCESS copy), a user
/// dump's first `.exe` module.
fn process_name(session: &Session) -> Option<String> {
    let target = session.target();
    if let Some(kernel) = target.as_kernel_dump() {
        return kernel.current_process_name().map(|(name, _)| name);
    }
    target
        .modules()
        .iter()
        .map(|m| ntdbg_engine::module_info::file_name_of(&m.name).to_string())
        .find(|n| n.to_ascii_lowercase().ends_with(".exe"))
}

/// The signature tag of a dump without an exception: a proven deadlock or a hang buckets apart
/// from a dump taken by hand with nothing known to be stuck. A live target the debugger
/// stopped is not hung for being stopped: only a deadlock is named there.
fn no_exception_tag(inferences: &[Inference], live: bool) -> &'static str {
    let has = |kind: &str| inferences.iter().any(|i| i.kind == kind);
    if has("deadlock") {
        "DEADLOCK"
    } else if live {
        "LIVE_STOP"
    } else if has("hang") {
        "HANG"
    } else {
        "NO_EXCEPTION"
    }
}
