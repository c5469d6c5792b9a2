//! Both protocol versions negotiate; garbage on the wire is answered and survived.

use crate::common::*;
use rmcp::model::ProtocolVersion;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn handshake_negotiates_2025_11_25() {
    let client = connect(Version::Handshake).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("ntdbg")
    );
    assert!(info
        .instructions
        .as_deref()
        .unwrap_or("")
        .contains("open_dump"));
    assert_eq!(client.list_all_tools().await.expect("tools").len(), 11);
    client.cancel().await.expect("cancel");
}

#[tokio::test]
async fn discover_negotiates_2026_07_28() {
    let client = connect(Version::Modern).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    assert_eq!(client.list_all_tools().await.expect("tools").len(), 11);
    let id = open(&client, "crashy-x64-null.dmp").await;
    let r = call(&client, "analyze_crash", json!({ "session_id": id })).await;
    assert!(ok(&r)["signature"]
        .as_str()
        .unwrap_or("")
        .contains("crashy!write_null"));
    client.cancel().await.expect("cancel");
}

/// Raw newline-delimited JSON-RPC, as a stdio client writes it.
#[tokio::test]
async fn malformed_lines_get_errors_and_the_server_keeps_serving() {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let server = ntdbg_mcp::NtdbgServer::new(ntdbg_mcp::AllowedDirs::new(&[samples()]).unwrap());
    let (r, w) = tokio::io::split(server_io);
    let served = tokio::spawn(ntdbg_mcp::serve_io(server, r, w));
    let (client_r, mut client_w) = tokio::io::split(client_io);
    let mut lines = BufReader::new(client_r).lines();
    let mut send = async |text: &str| {
        client_w.write_all(text.as_bytes()).await.unwrap();
        client_w.write_all(b"\n").await.unwrap();
    };

    send("this is not json").await;
    let reply: serde_json::Value =
        serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert!(reply["id"].is_null());

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    send(&init.to_string()).await;
    let reply: serde_json::Value =
        serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;

    send(r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/li"#).await; // cut short
    let reply: serde_json::Value =
        serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");

    send(r#"{"not": "json-rpc"}"#).await; // JSON, wrong shape
    let reply: serde_json::Value =
        serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");

    send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#).await;
    let reply: serde_json::Value =
        serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["result"]["tools"].as_array().map(Vec::len), Some(11));

    // End of input (stdin closed): the server finishes.
    client_w.shutdown().await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), served)
        .await
        .expect("server ends")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn prompts_are_listed_and_filled_in() {
    let client = connect(Version::Handshake).await;
    let prompts = client.list_all_prompts().await.expect("prompts");
    let names: Vec<_> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"triage-dump") && names.contains(&"triage-kernel-dump"),
        "{names:?}"
    );
    for p in &prompts {
        assert!(p.description.as_deref().is_some_and(|d| !d.is_empty()));
        let args = p.arguments.as_deref().unwrap_or_default();
        assert!(
            args.iter()
                .any(|a| a.name == "path" && a.required == Some(true)),
            "{p:?}"
        );
    }
    let Some(serde_json::Value::Object(args)) = Some(json!({"path": "C:\\dumps\\app.dmp"})) else {
        unreachable!()
    };
    let got = client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("triage-dump").with_arguments(args))
        .await
        .expect("prompt");
    let text = serde_json::to_string(&got.messages).unwrap();
    assert!(
        text.contains("C:\\\\dumps\\\\app.dmp") && text.contains("analyze_crash"),
        "{text}"
    );
    client.cancel().await.expect("cancel");
}

/// A reader that counts the bytes taken from it.
struct Counted {
    inner: std::io::Cursor<Vec<u8>>,
    taken: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl tokio::io::AsyncRead for Counted {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        self.taken
            .fetch_add(read, std::sync::atomic::Ordering::SeqCst);
        polled
    }
}

/// Issue 35, item 8: a client that pipelines 120,000 requests and never reads a reply is held
/// back. With time paused, the sleep below ends only once every task waits, so what the server
/// has read by then is all it will ever read from such a client.
#[tokio::test(start_paused = true)]
async fn a_client_that_never_reads_is_held_back() {
    const REQUESTS: usize = 120_000;
    let mut input = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    input.push_str("\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    for id in 0..REQUESTS {
        input.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n"
        ));
    }
    let total = input.len();
    let taken = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let reader = Counted {
        inner: std::io::Cursor::new(input.into_bytes()),
        taken: taken.clone(),
    };
    let (writer, unread) = tokio::io::duplex(64 << 10);
    let server = ntdbg_mcp::NtdbgServer::new(ntdbg_mcp::AllowedDirs::new(&[samples()]).unwrap());
    let served = tokio::spawn(ntdbg_mcp::serve_io(server, reader, writer));
    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    assert!(!served.is_finished(), "the server is still serving");
    let read = taken.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        read < total / 10,
        "the server read {read} of {total} bytes from a client that reads nothing"
    );
    drop(unread);
}
