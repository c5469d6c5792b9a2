//! Golden text of every command on the repository's own sample dumps (insta snapshots in
//! `tests/snapshots/`). Regenerate with `INSTA_UPDATE=always cargo test -p ntdbg-commands --test commands golden::`
//! after a deliberate change, and review the diff.

use ntdbg_engine::Session;

/// Opens a sample with its own folder as the symbol path.
fn open(sample: &str) -> Session {
    ntdbg_testutil::open_sample(sample)
}

/// Runs one command and returns its text with machine-specific paths replaced.
fn run(session: &mut Session, command: &str) -> String {
    let root = ntdbg_testutil::repo_root().display().to_string();
    let text = match ntdbg_commands::run_command(session, command) {
        Ok(out) => out.text,
        Err(e) => format!("ERROR {}: {}", e.code, e.message),
    };
    text.replace(&root, "<repo>")
}

const X64_COMMANDS: &[(&str, &str)] = &[
    ("lastevent", ".lastevent"),
    ("exr", ".exr -1"),
    ("ecxr", ".ecxr"),
    ("r_after_ecxr", "r"),
    ("r_some", "r rax, rip, efl, al"),
    ("k", "k"),
    ("kb", "kb"),
    ("kn", "kn"),
    ("kp", "kp 3"),
    ("kc", "kc"),
    ("threads", "~"),
    ("process", "|"),
    ("lm", "lm"),
    ("lmv_crashy", "lmv m crashy"),
    ("db", "db @rsp L40"),
    ("dw", "dw @rsp L10"),
    ("dd", "dd @rsp L10"),
    ("dq", "dq @rsp L4"),
    ("dps", "dps @rsp L6"),
    ("u", "u @rip"),
    ("ub", "ub @rip L4"),
    ("uf", "uf crashy!write_null"),
    ("ln", "ln @rip"),
    ("x", "x crashy!mode_*"),
    ("x_types", "x /t crashy!mode_*"),
    ("x_data", "x crashy!g_*"),
    ("x_data_types", "x /t crashy!g_*"),
    ("eval", "? crashy!write_null + 0n16"),
    ("eval_poi", "? poi(@rsp+8)"),
    ("vertarget", "vertarget"),
    ("time", ".time"),
    ("teb", "!teb"),
    ("analyze", "!analyze -v"),
    ("unknown", "frobnicate"),
    ("bad_register", "r nosuchreg"),
];

#[test]
fn x64_null_sample_commands() {
    let mut session = open("crashy-x64-null.dmp");
    for (name, command) in X64_COMMANDS {
        let text = run(&mut session, command);
        insta::assert_snapshot!(format!("x64_null__{name}"), text, command);
    }
}

#[test]
fn x86_null_sample_commands() {
    let mut session = open("x86/crashy-x86-null.dmp");
    for (name, command) in [
        ("ecxr", ".ecxr"),
        ("kb", "kb"),
        ("kn", "kn"),
        ("u", "u @eip L4"),
        ("dd", "dd @esp L8"),
        ("lm", "lm"),
        ("eval", "? @eip"),
    ] {
        let text = run(&mut session, command);
        insta::assert_snapshot!(format!("x86_null__{name}"), text, command);
    }
}

#[test]
fn thread_commands_on_a_worker_thread_crash() {
    let mut session = open("crashy-x64-thread.dmp");
    for (name, command) in [
        ("threads", "~"),
        ("all_stacks", "~*k"),
        ("switch", "~0s"),
        ("threads_after", "~"),
    ] {
        let text = run(&mut session, command);
        insta::assert_snapshot!(format!("x64_thread__{name}"), text, command);
    }
}

#[test]
fn lm_shows_deferred_symbols_until_they_are_loaded() {
    let mut session = open("crashy-x64-null.dmp");
    for (name, command) in [
        ("lm_fresh", "lm"),
        ("reload_f", ".reload /f"),
        ("lm_after_reload_f", "lm"),
        ("reload", ".reload"),
        ("lm_after_reload", "lm"),
        ("reload_f_crashy", ".reload /f crashy.exe"),
        ("lm_after_reload_f_crashy", "lm"),
        ("reload_f_nosuch", ".reload /f nosuch"),
    ] {
        let text = run(&mut session, command);
        insta::assert_snapshot!(format!("x64_null__{name}"), text, command);
    }
}

#[test]
fn dt_on_the_sample_pdb() {
    let mut session = open("crashy-x64-null.dmp");
    run(&mut session, ".ecxr");
    for (name, command) in [
        ("dt_mode", "dt crashy!mode"),
        ("dt_any_module", "dt _EXCEPTION_RECORD"),
        ("dt_values", "dt crashy!_M128A @rsp"),
        (
            "dt_fields_recursive",
            "dt -r1 crashy!_CONTEXT @rsp Rip Xmm0",
        ),
        ("dt_missing_memory", "dt crashy!mode 10"),
        ("dt_list", "dt crashy!*EXCEPTION*"),
        ("dt_unknown", "dt nosuch"),
        ("dt_unknown_field", "dt crashy!_CONTEXT @rsp NoSuchField"),
        ("dt_no_type", "dt"),
        ("dt_verbose", "dt -v crashy!_EXCEPTION_POINTERS"),
        ("dt_typedef", "dt crashy!PEXCEPTION_POINTERS"),
        ("dt_arrays", "dt -a2 crashy!_CONTEXT @rsp VectorRegister"),
        ("dt_bad_array_count", "dt -ax crashy!_CONTEXT"),
    ] {
        let text = run(&mut session, command);
        insta::assert_snapshot!(format!("x64_null__{name}"), text, command);
    }
}
