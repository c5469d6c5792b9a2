//! Many sessions at once, independent of each other.

use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_side_by_side() {
    let client = connect(Version::Handshake).await;
    let (a, b) = tokio::join!(
        open(&client, "crashy-x64-null.dmp"),
        open(&client, "crashy-x64-divzero.dmp")
    );
    assert_ne!(a, b);
    let (ra, rb) = tokio::join!(
        call(&client, "analyze_crash", json!({ "session_id": a })),
        call(&client, "analyze_crash", json!({ "session_id": b })),
    );
    assert_eq!(ok(&ra)["event"]["code"], "0xc0000005");
    assert_eq!(ok(&rb)["event"]["code"], "0xc0000094");

    // State is per session: `~` current thread and `.ecxr` scope do not leak across.
    let r = call(
        &client,
        "run_command",
        json!({ "session_id": a, "command": ".ecxr" }),
    )
    .await;
    ok(&r);

    let r = call(&client, "list_sessions", json!({})).await;
    let listed = ok(&r)["sessions"].as_array().cloned().unwrap_or_default();
    assert_eq!(listed.len(), 2);
    assert!(listed
        .iter()
        .all(|s| s["run_state"] == "dump" && s["busy"] == false));
    assert!(listed.iter().any(|s| s["target"]
        .as_str()
        .unwrap_or("")
        .ends_with("crashy-x64-divzero.dmp")));

    let r = call(&client, "close_session", json!({ "session_id": a })).await;
    assert_eq!(ok(&r)["open_sessions"], json!([b]));
    let r = call(
        &client,
        "run_command",
        json!({ "session_id": b, "command": "kn 2" }),
    )
    .await;
    assert_eq!(ok(&r)["results"][0]["status"], "succeeded");
    client.cancel().await.expect("cancel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_shared_by_clients_of_one_server_state_only() {
    // Two independent servers know nothing of each other's sessions.
    let one = connect(Version::Handshake).await;
    let two = connect(Version::Modern).await;
    let id = open(&one, "crashy-x64-null.dmp").await;
    let r = call(&two, "analyze_crash", json!({ "session_id": id })).await;
    assert_eq!(err(&r)["code"], "unknown_session");
    one.cancel().await.expect("cancel");
    two.cancel().await.expect("cancel");
}
