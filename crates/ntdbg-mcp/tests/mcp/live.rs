//! The live-target tools through a real MCP client against a real `gdbserver` (started by
//! the test; skipped loudly without gdbserver or cc): attach, breakpoints, `g`, races between
//! `break_in`, `wait_for_event` and a `g` in progress, replay with `since_ms`, commands sent
//! while running, close. Prints how long each call took.

use crate::common::{call, connect, err, ok, ran, text, Client, Version};
use ntdbg_testutil::gdbserver::{live_program, GdbServer};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn timed(client: &Client, name: &'static str, args: Value) -> rmcp::model::CallToolResult {
    let t = Instant::now();
    let r = call(client, name, args).await;
    eprintln!("{name}: {:?}", t.elapsed());
    r
}

/// Waits (bounded) until `list_sessions` says session `id`'s target runs.
async fn wait_until_running(client: &Client, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = call(client, "list_sessions", json!({})).await;
        let running = ok(&r)["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["session_id"] == id && s["run_state"] == "running");
        if running {
            return;
        }
        assert!(Instant::now() < deadline, "the target never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn attach_break_run_race_and_close_over_mcp() {
    let Some(prog) = live_program() else { return };
    let server = GdbServer::start(prog, &[]);
    let client = std::sync::Arc::new(connect(Version::Handshake).await);
    let func = prog.symbol("ntdbg_target_func");

    let r = timed(
        &client,
        "attach",
        json!({ "target": server.target(), "timeout_seconds": 5 }),
    )
    .await;
    let a = ok(&r).clone();
    let id = a["session_id"].as_str().unwrap().to_string();
    assert!(text(&r).starts_with(&id));
    assert_eq!(a["kind"], "live");
    assert_eq!(a["run_state"], "halted");
    assert!(a["trailer"]
        .as_str()
        .unwrap()
        .starts_with("[target halted @ ~0 "));

    // On a live target a failed command stops the batch by default: no `g` after a `bp` that
    // was not set.
    let r = timed(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "bp no_such_symbol_zz; g" }),
    )
    .await;
    let stopped = ran(&r);
    assert_eq!(stopped["results"][0]["status"], "failed", "{stopped}");
    assert_eq!(stopped["results"][1]["status"], "not_executed", "{stopped}");
    assert!(stopped["trailer"]
        .as_str()
        .unwrap()
        .starts_with("[target halted"));

    let r = timed(
        &client,
        "run_command",
        json!({ "session_id": id, "command": format!("bp {func:#x}; bl") }),
    )
    .await;
    assert!(ok(&r)["results"][1]["output"]
        .as_str()
        .unwrap()
        .contains("0001 (0001)"));
    let r = timed(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "g", "timeout_ms": 5000 }),
    )
    .await;
    let out = ok(&r);
    assert!(
        out["results"][0]["output"]
            .as_str()
            .unwrap()
            .starts_with("Breakpoint 0 hit"),
        "{out}"
    );
    assert!(
        out["trailer"]
            .as_str()
            .unwrap()
            .contains(&format!("{func:08x}")),
        "{out}"
    );
    assert!(text(&r).ends_with(out["trailer"].as_str().unwrap()));
    let r = timed(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "k" }),
    )
    .await;
    assert_eq!(ok(&r)["results"][0]["status"], "succeeded");

    // A stop in the past is replayed by since_ms at once, even with no wait.
    let r = call(
        &client,
        "wait_for_event",
        json!({ "session_id": id, "timeout_ms": 0, "since_ms": 60000 }),
    )
    .await;
    let w = ok(&r);
    assert!(
        w["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["text"].as_str().unwrap().starts_with("Breakpoint 0 hit")),
        "{w}"
    );

    // Run with nothing to stop it: [target running]; commands that need a halted target are
    // not run; a second g is refused.
    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "bc *; g", "timeout_ms": 200 }),
    )
    .await;
    assert_eq!(ok(&r)["trailer"], "[target running]");
    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "k", "timeout_ms": 200 }),
    )
    .await;
    assert_eq!(
        ok(&r)["results"][0]["status"],
        "not_executed",
        "{:?}",
        ok(&r)
    );
    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "g", "timeout_ms": 200 }),
    )
    .await;
    assert_eq!(ok(&r)["results"][0]["status"], "not_executed");
    assert!(ok(&r)["results"][0]["output"]
        .as_str()
        .unwrap()
        .contains("already running"));
    let r = call(&client, "list_sessions", json!({})).await;
    assert_eq!(ok(&r)["sessions"][0]["run_state"], "running");

    // Race 1: break_in while wait_for_event waits on the same session. Whichever call the
    // server takes first, the wait sees the stop: a live one, or replayed (since_ms) when the
    // break-in came first.
    let waiting = {
        let client = client.clone();
        let id = id.clone();
        tokio::spawn(async move {
            call(
                &client,
                "wait_for_event",
                json!({ "session_id": id, "timeout_ms": 20000, "since_ms": 60000 }),
            )
            .await
        })
    };
    let r = timed(&client, "break_in", json!({ "session_id": id })).await;
    assert_eq!(ok(&r)["run_state"], "halted");
    let w = waiting.await.unwrap();
    let w = ok(&w);
    assert_eq!(w["timed_out"], false);
    assert!(
        w["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "stopped"),
        "{w}"
    );

    // Race 2: break_in while a `g` holds the session lock waiting for its stop (once the
    // session says the target runs). A break_in that waited for the `g` would find it ended
    // after its 20 s without a stop, and the `g` would not print the break-in.
    let going = {
        let client = client.clone();
        let id = id.clone();
        tokio::spawn(async move {
            call(
                &client,
                "run_command",
                json!({ "session_id": id, "command": "g", "timeout_ms": 20000 }),
            )
            .await
        })
    };
    wait_until_running(&client, &id).await;
    let r = timed(&client, "break_in", json!({ "session_id": id })).await;
    assert_eq!(ok(&r)["run_state"], "halted");
    let g = going.await.unwrap();
    assert!(
        ok(&g)["results"][0]["output"]
            .as_str()
            .unwrap()
            .contains("Break instruction exception"),
        "{:?}",
        ok(&g)
    );

    // wait_for_event on a halted target with nothing new returns at once.
    let r = timed(
        &client,
        "wait_for_event",
        json!({ "session_id": id, "timeout_ms": 10000 }),
    )
    .await;
    assert_eq!(ok(&r)["run_state"], "halted");

    let r = timed(&client, "close_session", json!({ "session_id": id })).await;
    assert!(ok(&r)["detach"].as_str().unwrap().contains("detached"));
    let r = call(&client, "break_in", json!({ "session_id": id })).await;
    assert_eq!(err(&r)["code"], "unknown_session");
}

#[tokio::test]
async fn a_silent_stub_times_out_and_dumps_are_not_live() {
    let client = connect(Version::Handshake).await;
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let r = call(
        &client,
        "attach",
        json!({ "target": format!("gdb:{}", silent.local_addr().unwrap()), "timeout_seconds": 1 }),
    )
    .await;
    // A port that accepts but never answers: the answer a refused target gets.
    assert_eq!(err(&r)["code"], "attach_refused");
    let id = crate::common::open(&client, "crashy-x64-null.dmp").await;
    let r = call(&client, "break_in", json!({ "session_id": id })).await;
    assert_eq!(err(&r)["code"], "not_live");
    client.cancel().await.expect("cancel");
}
