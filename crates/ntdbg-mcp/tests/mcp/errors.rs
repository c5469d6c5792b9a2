//! Every error case answers a tool result with `isError: true` and `{code, message, hint,
//! recoverable}`.

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn file_errors() {
    let dir = scratch("errors");
    std::fs::write(dir.join("text.dmp"), b"hello, this is no dump").expect("write");
    let whole = std::fs::read(samples().join("crashy-x64-null.dmp")).expect("sample");
    std::fs::write(dir.join("cut.dmp"), &whole[..whole.len() / 3]).expect("write");
    let client = connect_with(Version::Handshake, [dir.clone()]).await;

    let r = call(
        &client,
        "open_dump",
        json!({ "path": dir.join("missing.dmp") }),
    )
    .await;
    let e = err(&r);
    assert_eq!(e["code"], "file_not_found");
    assert_eq!(e["recoverable"], true);

    let r = call(
        &client,
        "open_dump",
        json!({ "path": dir.join("text.dmp") }),
    )
    .await;
    let e = err(&r);
    assert_eq!(e["code"], "not_a_dump");
    assert_eq!(e["recoverable"], false);

    // A dump cut short opens with what the file still holds, and says what was lost.
    let r = call(&client, "open_dump", json!({ "path": dir.join("cut.dmp") })).await;
    let opened = ok(&r)["headline"].as_str().unwrap_or("").to_string();
    assert!(opened.contains("the file is cut short"), "{opened}");

    let r = call(
        &client,
        "open_dump",
        json!({ "path": samples().join("crashy-x64-null.dmp") }),
    )
    .await;
    let e = err(&r);
    assert_eq!(e["code"], "path_not_allowed");
    assert!(e["hint"]
        .as_str()
        .unwrap_or("")
        .contains(&*dir.canonicalize().unwrap().to_string_lossy()));

    let r = call(
        &client,
        "open_dump",
        json!({ "path": dir.join("../../etc/passwd") }),
    )
    .await;
    assert_eq!(err(&r)["code"], "path_not_allowed");

    let r = call(&client, "open_dump", json!({ "path": "/etc/passwd" })).await;
    assert_eq!(err(&r)["code"], "path_not_allowed");
    client.cancel().await.expect("cancel");
    let _ = std::fs::remove_dir_all(dir);
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_out_of_allowed_dirs_are_refused() {
    let dir = scratch("links");
    std::os::unix::fs::symlink(samples().join("crashy-x64-null.dmp"), dir.join("link.dmp"))
        .expect("link");
    let client = connect_with(Version::Handshake, [dir.clone()]).await;
    let r = call(
        &client,
        "open_dump",
        json!({ "path": dir.join("link.dmp") }),
    )
    .await;
    assert_eq!(err(&r)["code"], "path_not_allowed");
    let r = call(&client, "list_dumps", json!({})).await;
    let listed = &ok(&r)["dumps"][0];
    assert_eq!(listed["error"]["code"], "path_not_allowed", "{listed}");
    client.cancel().await.expect("cancel");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn command_errors() {
    let client = connect(Version::Handshake).await;
    let id = open(&client, "crashy-x64-null.dmp").await;

    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "frobnicate" }),
    )
    .await;
    let run = ran(&r);
    assert_eq!(run["results"][0]["status"], "failed");
    assert_eq!(run["results"][0]["error"]["code"], "unknown_command");

    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": ".echo \"unterminated; kn" }),
    )
    .await;
    let e = err(&r);
    assert_eq!(e["code"], "syntax_error");

    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "db" }),
    )
    .await;
    let run = ran(&r);
    assert!(run["results"][0]["status"].is_string());

    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "dd 0x1 L" }),
    )
    .await;
    let first = &ran(&r)["results"][0];
    if first["status"] == "failed" {
        assert!(first["error"]["code"].is_string());
    }

    let many = vec!["r"; 65].join(";");
    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": many }),
    )
    .await;
    assert_eq!(err(&r)["code"], "too_many_commands");
    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": vec!["r rip"; 64].join(";") }),
    )
    .await;
    assert_eq!(ok(&r)["commands_executed"], 64);

    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "  ;  " }),
    )
    .await;
    assert_eq!(err(&r)["code"], "empty_command");
    client.cancel().await.expect("cancel");
}

#[tokio::test]
async fn unknown_sessions_list_the_open_ones() {
    let client = connect(Version::Handshake).await;
    let r = call(
        &client,
        "analyze_crash",
        json!({ "session_id": "s99-0000" }),
    )
    .await;
    let e = err(&r);
    assert_eq!(e["code"], "unknown_session");
    assert!(
        e["hint"].as_str().unwrap_or("").contains("open_dump"),
        "{e}"
    );

    let id = open(&client, "crashy-x64-null.dmp").await;
    let r = call(
        &client,
        "run_command",
        json!({ "session_id": "s99-0000", "command": "k" }),
    )
    .await;
    let e = err(&r);
    assert!(e["hint"].as_str().unwrap_or("").contains(&id), "{e}");

    let r = call(&client, "close_session", json!({ "session_id": id })).await;
    assert_eq!(ok(&r)["session_id"], id);
    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "k" }),
    )
    .await;
    assert_eq!(err(&r)["code"], "unknown_session");
    // Closing is idempotent: a session this server closed is "already closed".
    let r = call(&client, "close_session", json!({ "session_id": id })).await;
    assert_eq!(ok(&r)["already_closed"], true);
    let r = call(
        &client,
        "close_session",
        json!({ "session_id": "s99-0000" }),
    )
    .await;
    assert_eq!(err(&r)["code"], "unknown_session");
    client.cancel().await.expect("cancel");
}

#[tokio::test]
async fn output_ids_expire_with_their_session() {
    let client = connect(Version::Handshake).await;
    let id = open(&client, "crashy-x64-null.dmp").await;
    let r = call(
        &client,
        "run_command",
        json!({ "session_id": id, "command": "kn" }),
    )
    .await;
    let command_id = ok(&r)["results"][0]["command_id"]
        .as_str()
        .expect("id")
        .to_string();
    let r = call(&client, "close_session", json!({ "session_id": id })).await;
    ok(&r);
    let r = call(&client, "read_output", json!({ "command_id": command_id })).await;
    let e = err(&r);
    assert_eq!(e["code"], "output_expired");
    assert!(e["message"].as_str().unwrap_or("").contains("expired"));
    let r = call(&client, "read_output", json!({ "command_id": "c1-zzzz" })).await;
    assert_eq!(err(&r)["code"], "unknown_output");
    client.cancel().await.expect("cancel");
}

#[tokio::test]
async fn bad_arguments_are_tool_errors() {
    let client = connect(Version::Handshake).await;
    let r = call(&client, "open_dump", json!({ "file": "x.dmp" })).await;
    let e = err(&r);
    assert_eq!(e["code"], "invalid_arguments");
    let r = call(
        &client,
        "run_command",
        json!({ "session_id": 5, "command": "k" }),
    )
    .await;
    assert_eq!(err(&r)["code"], "invalid_arguments");
    client.cancel().await.expect("cancel");
}

#[tokio::test]
async fn live_tools_give_clear_errors_without_a_live_target() {
    let client = connect(Version::Handshake).await;
    // Nothing listens on the port: the answer a refused target gets (nothing said about what
    // listens where), quickly.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let r = call(
        &client,
        "attach",
        json!({ "target": format!("gdb:127.0.0.1:{port}"), "timeout_seconds": 1 }),
    )
    .await;
    assert_eq!(err(&r)["code"], "attach_refused", "{r:?}");
    let r = call(&client, "attach", json!({ "target": "tcp:nowhere" })).await;
    assert_eq!(err(&r)["code"], "unsupported_target");
    // A symbol folder outside the allowed directories is refused before connecting, as for
    // open_dump.
    let r = call(
        &client,
        "attach",
        json!({ "target": format!("gdb:127.0.0.1:{port}"), "symbols_path": "/etc" }),
    )
    .await;
    assert_eq!(err(&r)["code"], "path_not_allowed", "{r:?}");
    for (tool, args) in [
        ("break_in", json!({ "session_id": "s1-0000" })),
        (
            "wait_for_event",
            json!({ "session_id": "s1-0000", "timeout_ms": 10 }),
        ),
    ] {
        let r = call(&client, tool, args).await;
        assert_eq!(err(&r)["code"], "unknown_session", "{tool}");
    }
    client.cancel().await.expect("cancel");
}
