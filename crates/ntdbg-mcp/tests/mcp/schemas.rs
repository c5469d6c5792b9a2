//! The tool definitions: names, described parameters, output schemas, honest annotations, and
//! the size budget of `tools/list`.

use crate::common::*;
use ntdbg_mcp::limits::TOOLS_LIST_BUDGET;
use serde_json::Value;

const TOOLS: &[&str] = &[
    "analyze_crash",
    "attach",
    "break_in",
    "close_session",
    "list_dumps",
    "list_sessions",
    "open_dump",
    "read_output",
    "run_command",
    "triage_dumps",
    "wait_for_event",
];

async fn tools() -> Vec<Value> {
    let client = connect(Version::Handshake).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    client.cancel().await.expect("cancel");
    tools
        .iter()
        .map(|t| serde_json::to_value(t).expect("tool json"))
        .collect()
}

/// The whole `tools/list` stays under about 6,000 tokens (24,000 characters of JSON): every
/// character is read by the agent in every conversation.
#[tokio::test]
async fn tools_list_stays_within_its_budget() {
    let tools = tools().await;
    let compact = serde_json::to_string(&tools).expect("json").chars().count();
    let pretty = serde_json::to_string_pretty(&tools)
        .expect("json")
        .chars()
        .count();
    eprintln!("tools/list: {compact} characters compact, {pretty} pretty-printed");
    assert!(
        compact < TOOLS_LIST_BUDGET,
        "tools/list is {compact} characters, over the {TOOLS_LIST_BUDGET} budget: shorten descriptions or schemas"
    );
}

#[tokio::test]
async fn every_tool_is_declared_completely() {
    let tools = tools().await;
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, TOOLS);
    for tool in &tools {
        let name = tool["name"].as_str().unwrap_or_default();
        let description = tool["description"].as_str().unwrap_or_default();
        assert!(description.len() > 40, "{name}: description too thin");
        let input = &tool["inputSchema"];
        assert_eq!(input["type"], "object", "{name}");
        for (param, schema) in input["properties"].as_object().into_iter().flatten() {
            assert!(
                schema["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty()),
                "{name}.{param} has no description"
            );
        }
        if TEXT_TOOLS.contains(&name) {
            // The answer is text; the typed value only on request (format "json").
            assert!(tool.get("outputSchema").is_none(), "{name}");
            assert!(input["properties"].get("format").is_some(), "{name}");
            continue;
        }
        let output = &tool["outputSchema"];
        assert_eq!(output["type"], "object", "{name}: output schema");
        assert!(
            output["properties"]
                .as_object()
                .is_some_and(|p| !p.is_empty()),
            "{name}"
        );
        let hints = &tool["annotations"];
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(hints[hint].is_boolean(), "{name}: {hint} missing");
        }
    }
}

#[tokio::test]
async fn annotations_tell_the_truth() {
    let tools = tools().await;
    let hint = |name: &str, h: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["annotations"][h].clone())
            .unwrap_or_default()
    };
    for read_only in [
        "list_dumps",
        "analyze_crash",
        "read_output",
        "list_sessions",
    ] {
        assert_eq!(hint(read_only, "readOnlyHint"), true, "{read_only}");
    }
    // run_command writes output_file; open_dump and attach create sessions.
    for writes in ["run_command", "open_dump", "attach", "close_session"] {
        assert_eq!(hint(writes, "readOnlyHint"), false, "{writes}");
    }
    assert_eq!(hint("close_session", "destructiveHint"), true);
    // output_file never overwrites, but `.dump /o FILE` on a live target does.
    assert_eq!(hint("run_command", "destructiveHint"), true);
    // Opening a dump that is open answers with its session; a second close is "already closed".
    for idempotent in ["open_dump", "close_session", "list_dumps", "read_output"] {
        assert_eq!(hint(idempotent, "idempotentHint"), true, "{idempotent}");
    }
    // Live targets are remote; dump sessions may download symbols from a symbol server.
    for open in [
        "attach",
        "break_in",
        "wait_for_event",
        "open_dump",
        "analyze_crash",
        "run_command",
    ] {
        assert_eq!(hint(open, "openWorldHint"), true, "{open}");
    }
    for local in [
        "list_dumps",
        "read_output",
        "list_sessions",
        "close_session",
    ] {
        assert_eq!(hint(local, "openWorldHint"), false, "{local}");
    }
}

#[tokio::test]
async fn descriptions_teach_the_workflow() {
    let tools = tools().await;
    let description = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["description"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert!(description("open_dump").contains("analyze_crash"));
    assert!(description("open_dump").contains("run_command"));
    assert!(description("run_command").contains("read_output"));
    assert!(description("attach").contains("gdb:HOST:PORT"));
    assert!(description("attach").contains("run_command"));
    assert!(description("wait_for_event").contains("since_ms"));
    assert!(description("run_command").contains("[target running]"));
}

/// analyze_crash answers text; with format "json" the typed report, the fields of
/// `ntdbg analyze --json`.
#[tokio::test]
async fn analyze_crash_gives_the_report_on_request() {
    let client = connect(Version::Handshake).await;
    let sid = open(&client, "crashy-x64-null.dmp").await;
    let plain = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("analyze_crash").with_arguments(
                serde_json::json!({ "session_id": sid, "format": "text" })
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        )
        .await
        .expect("analyze_crash");
    assert!(plain.structured_content.is_none());
    assert!(text(&plain).contains("signature: "), "{}", text(&plain));
    let report = call(
        &client,
        "analyze_crash",
        serde_json::json!({ "session_id": sid }),
    )
    .await;
    let report = ok(&report);
    for key in [
        "dump",
        "event",
        "faulting_module",
        "stack",
        "signature",
        "inferences",
        "limitations",
        "next_commands",
    ] {
        assert!(report.get(key).is_some(), "{key} missing from {report}");
    }
    assert!(report["event"]["code"].is_string(), "{report}");
    client.cancel().await.expect("cancel");
}
