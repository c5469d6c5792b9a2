//! `frame_locals` / `FRAME_LOCALS` of the analysis report: the faulting frame's and the first
//! application frame's parameters and locals, bounded, and the `.frame N; dv /t` suggestion.

use ntdbg_engine::Session;

fn open(rel: &str) -> Session {
    ntdbg_testutil::open_sample(rel)
}

#[test]
fn faulting_frame_locals_in_json_and_text() {
    let session = open("locals/x64-O2/locals.dmp");
    let report = ntdbg_analysis::analyze(&session);
    // The faulting frame is the first application frame: one entry.
    assert_eq!(report.frame_locals.len(), 1);
    let locals = &report.frame_locals[0];
    assert_eq!(locals.frame, 0);
    let names: Vec<&str> = locals.variables.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["p", "index", "scale", "product"]);
    assert!(locals.variables.len() <= ntdbg_analysis::frame_locals::MAX_FRAME_LOCALS);
    let scale = &locals.variables[2];
    assert!(!scale.available && scale.value == "<value unavailable>");
    assert!(report
        .next_commands
        .contains(&".frame 0; dv /t".to_string()));

    let json = serde_json::to_value(&report).expect("json");
    let first = &json["frame_locals"][0];
    assert_eq!(first["frame"], 0);
    assert_eq!(first["variables"][3]["name"], "product");
    assert_eq!(first["variables"][3]["kind"], "local");
    assert_eq!(first["variables"][3]["location"], "@r8d");
    assert_eq!(first["variables"][3]["available"], true);

    let text = ntdbg_analysis::render::render_report(&report);
    assert!(
        text.contains("FRAME_LOCALS:\n00 crash_in_point\n"),
        "{text}"
    );
    assert!(text.contains(" scale = <value unavailable>\n"), "{text}");
}

#[test]
fn first_application_frame_below_a_system_frame() {
    // RaiseException: frame 0 is in kernelbase (no PDB variables), do_raise is ours.
    let session = open("crashy-x64-raise.dmp");
    let report = ntdbg_analysis::analyze(&session);
    let frames: Vec<usize> = report.frame_locals.iter().map(|l| l.frame).collect();
    assert_eq!(frames.len(), 1, "{frames:?}");
    let app = frames[0];
    assert!(app > 0);
    assert!(report.frame_locals[0]
        .function
        .as_deref()
        .is_some_and(|f| f.starts_with("do_raise")));
    assert!(report
        .next_commands
        .contains(&format!(".frame {app:x}; dv /t")));
}
