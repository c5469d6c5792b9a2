//! Shared setup: a server over a duplex pipe, and a client speaking either protocol version.

use ntdbg_mcp::{AllowedDirs, NtdbgServer};
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::Value;
use std::path::PathBuf;

/// The repository's sample dumps.
pub fn samples() -> PathBuf {
    ntdbg_testutil::repo_root().join("testdata")
}

/// A fresh scratch folder (also an allowed directory in [`connect_with`]).
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ntdbg-mcp-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A connected client.
pub type Client = RunningService<RoleClient, ()>;

/// Which lifecycle the client uses.
#[derive(Debug, Clone, Copy)]
pub enum Version {
    /// `initialize` handshake, 2025-11-25.
    Handshake,
    /// `server/discover` and per-request metadata, 2026-07-28.
    Modern,
}

/// A server allowed to read the samples, and a client connected to it.
pub async fn connect(version: Version) -> Client {
    connect_with(version, [samples()]).await
}

/// A server with these allowed directories, and a client connected to it.
pub async fn connect_with(version: Version, dirs: impl IntoIterator<Item = PathBuf>) -> Client {
    let dirs: Vec<PathBuf> = dirs.into_iter().collect();
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let server = NtdbgServer::new(AllowedDirs::new(&dirs).expect("allowed dirs"));
    let (r, w) = tokio::io::split(server_io);
    tokio::spawn(ntdbg_mcp::serve_io(server, r, w));
    match version {
        Version::Handshake => ().serve(client_io).await.expect("handshake"),
        Version::Modern => ()
            .serve_with_lifecycle(
                client_io,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("discover"),
    }
}

/// The tools whose answer is text: they send structured content only with format "json",
/// which [`call`] asks for unless the test chose a format.
pub const TEXT_TOOLS: &[&str] = &[
    "analyze_crash",
    "list_dumps",
    "read_output",
    "run_command",
    "triage_dumps",
];

/// Calls a tool; protocol errors fail the test.
pub async fn call(client: &Client, name: &'static str, args: Value) -> CallToolResult {
    let Value::Object(mut args) = args else {
        panic!("arguments must be an object")
    };
    if TEXT_TOOLS.contains(&name) {
        args.entry("format").or_insert_with(|| "json".into());
    }
    client
        .call_tool(CallToolRequestParams::new(name).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The structured content of a successful call.
pub fn ok(result: &CallToolResult) -> &Value {
    assert_ne!(
        result.is_error,
        Some(true),
        "tool failed: {:?}",
        result.content
    );
    result
        .structured_content
        .as_ref()
        .expect("structuredContent")
}

/// The structured content of a `run_command` batch, whose `isError` says whether a command
/// failed or ran out of time (the per-command results are there either way).
pub fn ran(result: &CallToolResult) -> &Value {
    let content = result
        .structured_content
        .as_ref()
        .expect("structuredContent");
    let failed = content["results"]
        .as_array()
        .expect("results")
        .iter()
        .any(|r| r["status"] == "failed" || r["status"] == "timed_out");
    assert_eq!(
        result.is_error.unwrap_or(false),
        failed,
        "isError against the results: {content}"
    );
    content
}

/// The structured error of a failed call, checked for the four fields.
pub fn err(result: &CallToolResult) -> &Value {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected an error: {:?}",
        result.structured_content
    );
    let e = result
        .structured_content
        .as_ref()
        .expect("structured error");
    assert!(e["code"].is_string(), "{e}");
    assert!(e["message"].is_string(), "{e}");
    assert!(e.get("hint").is_some(), "{e}");
    assert!(e["recoverable"].is_boolean(), "{e}");
    e
}

/// The text content of a result.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// Opens a sample dump and returns the session id.
pub async fn open(client: &Client, sample: &str) -> String {
    let r = call(
        client,
        "open_dump",
        serde_json::json!({ "path": samples().join(sample) }),
    )
    .await;
    ok(&r)["session_id"]
        .as_str()
        .expect("session_id")
        .to_string()
}
