//! `.frame`, `dv` and `kp` on the `locals` samples (tools/crashgen/locals.c): goldens of the
//! text, and the values the source gives asserted in the text itself.

use ntdbg_engine::Session;

fn open(variant: &str) -> Session {
    ntdbg_testutil::open_sample(&format!("locals/{variant}/locals.dmp"))
}

fn run(session: &mut Session, command: &str) -> String {
    match ntdbg_commands::run_command(session, command) {
        Ok(out) => out.text,
        Err(e) => format!("ERROR {}: {}", e.code, e.message),
    }
}

const COMMANDS: &[(&str, &str)] = &[
    ("ecxr", ".ecxr"),
    ("kn", "kn"),
    ("kp", "kp"),
    ("kP", "kP 2"),
    ("dv", "dv"),
    ("dv_tvi", "dv /t /v /i"),
    ("frame_1", ".frame 1"),
    ("frame_1_dv_tvi", "dv /t /v /i"),
    ("frame_alone", ".frame"),
    ("frame_r_1", ".frame /r 1"),
    ("frame_2", ".frame 2"),
    ("frame_2_dv_tv", "dv /t /v"),
    ("dv_pattern", "dv /t o*"),
    ("frame_bad", ".frame 40"),
    ("dv_bad_switch", "dv /q"),
    ("frame_c_1", ".frame /c 1"),
    ("r_after_frame_c", "r"),
    ("cxr_back", ".cxr"),
    ("frame_after_cxr", ".frame"),
];

#[test]
fn locals_x64_o2() {
    let mut s = open("x64-O2");
    for (name, command) in COMMANDS {
        let text = run(&mut s, command);
        insta::assert_snapshot!(format!("locals_x64_O2__{name}"), text, command);
    }
}

#[test]
fn locals_x64_o0() {
    let mut s = open("x64-O0");
    for (name, command) in COMMANDS {
        let text = run(&mut s, command);
        insta::assert_snapshot!(format!("locals_x64_O0__{name}"), text, command);
    }
}

#[test]
fn locals_typed_result() {
    let mut s = open("x64-O2");
    run(&mut s, ".ecxr");
    run(&mut s, ".frame 1");
    let out = ntdbg_commands::run_command(&mut s, "dv").expect("dv");
    let json = serde_json::to_value(out.typed.expect("typed")).expect("json");
    assert_eq!(json["kind"], "locals");
    assert_eq!(json["frame"], 1);
    let vars = json["variables"].as_array().expect("variables");
    let names: Vec<&str> = vars.iter().filter_map(|v| v["name"].as_str()).collect();
    assert_eq!(names, ["pts", "count", "limit", "total", "i"]);
    let total = &vars[3];
    assert_eq!(total["kind"], "local");
    assert_eq!(total["location"], "@ebx");
    assert_eq!(total["available"], true);
    assert_eq!(vars[4]["available"], false);
    assert_eq!(vars[4]["value"], "<value unavailable>");
}

#[test]
fn values_from_the_source_in_the_text() {
    let mut s = open("x64-O2");
    run(&mut s, ".ecxr");
    let dv0 = run(&mut s, "dv");
    assert!(
        dv0.contains("index = 0n2\n") && dv0.contains("product = 0n11102\n"),
        "{dv0}"
    );
    assert!(dv0.contains("scale = <value unavailable>\n"), "{dv0}");
    run(&mut s, ".frame 1");
    let dv1 = run(&mut s, "dv /t");
    assert!(
        dv1.contains("int total = 0n111\n") && dv1.contains("int limit = 0n2\n"),
        "{dv1}"
    );
    assert!(dv1.contains("int i = <value unavailable>\n"), "{dv1}");
    let kp = run(&mut s, "kp 3");
    assert!(kp.contains("locals!main(int argc = 0n2, "), "{kp}");

    let mut s = open("x64-O0");
    run(&mut s, ".ecxr");
    run(&mut s, ".frame 1");
    let dv1 = run(&mut s, "dv");
    for line in [
        "count = 0n4\n",
        "limit = 0n2\n",
        "total = 0n111\n",
        "i = 0n2\n",
    ] {
        assert!(dv1.contains(line), "{line} in {dv1}");
    }
}

/// `$scopeip` is the selected frame's instruction pointer: `$ip` in frame 0, the frame's own
/// after `.frame N` (as `ln $scopeip` names that frame's function).
#[test]
fn scopeip_follows_the_selected_frame() {
    let mut s = open("x64-O2");
    run(&mut s, ".ecxr");
    assert_eq!(s.evaluate("$scopeip").ok(), s.evaluate("@$ip").ok());
    let frame_1 = s.stack().expect("stack").frames[1].instruction;
    run(&mut s, ".frame 1");
    assert_eq!(s.evaluate("@$scopeip").ok(), Some(frame_1));
    let named = run(&mut s, "ln @$scopeip");
    let caller = run(&mut s, &format!("ln {frame_1:#x}"));
    assert_eq!(named, caller);
    assert!(!named.starts_with("ERROR"), "{named}");
}

/// A stack overflow is deeper than the default walk: `k` with a count past it walks on to
/// where the recursion began (`main`, the C runtime's start), and a count the walk stops
/// short of says how to go further.
#[test]
fn frame_count_walks_past_the_default_limit() {
    let mut s = ntdbg_testutil::open_sample("crashy-x64-stack.dmp");
    run(&mut s, ".ecxr");
    let default = s.stack().expect("the exception thread's stack");
    assert_eq!(default.frames.len(), ntdbg_engine::stack::MAX_FRAMES);
    assert!(
        default
            .note
            .as_deref()
            .is_some_and(|n| n.contains("a frame count walks further")),
        "{:?}",
        default.note
    );
    let deep = run(&mut s, "kn 0n100000");
    let rows = deep
        .lines()
        .filter(|l| l.contains("crashy!recurse"))
        .count();
    assert!(
        rows > ntdbg_engine::stack::MAX_FRAMES,
        "{rows} recursion rows"
    );
    let tail: Vec<&str> = deep.lines().rev().take(12).collect();
    assert!(
        tail.iter().any(|l| l.contains("crashy!main"))
            && tail.iter().any(|l| l.contains("mainCRTStartup")),
        "{tail:#?}"
    );
    assert!(
        !deep.contains("stopped after"),
        "{}",
        &deep[deep.len() - 400..]
    );
    let short = run(&mut s, "k 0x500");
    assert!(short.lines().count() > 0x500);
    let last = short.lines().last().unwrap();
    assert!(
        !last.contains(" 00000000`00000000 "),
        "the last row shown has its return address: {last}"
    );
}
