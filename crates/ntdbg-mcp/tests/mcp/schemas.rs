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

/// The analysis report's schema is the real one: the fields of `ntdbg analyze --json`.
#[tokio::test]
async fn analyze_crash_declares_the_report_schema() {
    let tools = tools().await;
    let schema = tools
        .iter()
        .find(|t| t["name"] == "analyze_crash")
        .map(|t| t["outputSchema"].clone())
        .unwrap_or_default();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
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
        assert!(required.contains(&key), "{key} missing from {required:?}");
    }
    let event = &schema["$defs"]["EventFacts"]["properties"];
    assert!(
        event.get("type").is_some() && event.get("code").is_some(),
        "{event}"
    );
}
