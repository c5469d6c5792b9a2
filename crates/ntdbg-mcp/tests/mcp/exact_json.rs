//! Exact JSON: no typed result, report or MCP result holds a 64-bit value as a JSON number
//! (JavaScript clients round numbers above 2^53: a kernel address would come out wrong).
//! Addresses, pointers and 64-bit values are `0x` hex strings; the integers left are the
//! counts, indexes, byte counts and durations of [`NUMBERS`], each with its reason.
//!
//! Two walks: every result *schema* (the typed results, the report, triage and listing
//! schemas as schemars derives them, with integer widths, and the full result schema of every
//! MCP tool), and real *results* (the command table and the report over the shipped sample and a
//! kernel dump, and every dump tool over MCP), where no number may reach 2^32 outside
//! [`NUMBERS`].

use crate::common::*;
use ntdbg_engine::Session;
use serde_json::{json, Value};
use std::collections::BTreeSet;

const INDEX: &str = "an index (thread ~N, frame or batch position): small by construction";
const COUNT: &str = "a count of threads, modules, dumps, handles or matches: below 2^32";
const BYTES: &str = "a byte count or offset of a file or of ntdbg's own output, not an \
                     address: exact in JSON up to 2^53 (8 PiB)";
const TIME: &str = "a duration or a Unix time: exact in JSON up to 2^53";
const LINES: &str = "a line number or line count of ntdbg's own output";

/// The integer properties that may hold values beyond 32 bits, as `Owner.property` (the
/// owner is a schema's `$defs` name or type, or for an MCP tool's result itself the tool's
/// name), and why a JSON number is right for each.
const NUMBERS: &[(&str, &str)] = &[
    ("Frame.index", INDEX),
    ("ThreadRow.index", INDEX),
    ("ThreadResult.thread", INDEX),
    ("ThreadTimesRow.index", INDEX),
    ("ThreadBrief.index", INDEX),
    ("CommandResultDto.index", INDEX),
    ("RegionRow.thread", INDEX),
    ("LastErrorRow.thread", INDEX),
    ("WaitFacts.thread", INDEX),
    ("UniqueStack.threads", INDEX),
    ("TypedResult.frame", INDEX),
    ("StackEntry.frame", INDEX),
    ("Vars.frame", INDEX),
    ("WaitFacts.frame", INDEX),
    ("SignatureFrame.frame", INDEX),
    ("TypedResult.unit", "a memory unit size: 1 to 8 bytes"),
    ("TypedResult.total_threads", COUNT),
    ("TypedResult.duplicate_threads", COUNT),
    ("HandleRow.object_info_records", COUNT),
    ("TypeCount.count", COUNT),
    ("DumpFacts.modules", COUNT),
    ("DumpFacts.threads", COUNT),
    ("TriageResult.dumps", COUNT),
    ("triage_dumps.dumps", COUNT),
    ("Bucket.count", COUNT),
    ("open_dump.threads", COUNT),
    ("open_dump.modules", COUNT),
    ("attach.threads", COUNT),
    ("run_command.commands_executed", COUNT),
    ("run_command.commands_skipped", COUNT),
    ("read_output.matches", COUNT),
    ("DumpSummary.size", BYTES),
    ("CommandResultDto.bytes_total", BYTES),
    ("OutputFileReport.bytes", BYTES),
    ("read_output.offset", LINES),
    ("read_output.lines_total", LINES),
    ("read_output.bytes_total", BYTES),
    ("read_output.next_offset", LINES),
    ("DumpSummary.time_unix", TIME),
    ("ThreadTimesRow.user_ms", TIME),
    ("ThreadTimesRow.kernel_ms", TIME),
    ("ThreadTimesRow.elapsed_ms", TIME),
    ("SessionInfo.age_seconds", TIME),
    ("SharedSymbolsInfo.modules", COUNT),
    ("SharedSymbolsInfo.hits", COUNT),
    ("SharedSymbolsInfo.loads", COUNT),
    ("SharedSymbolsInfo.evictions", COUNT),
    ("SharedSymbolsInfo.bytes", BYTES),
    ("SharedSymbolsInfo.limit", BYTES),
    ("LiveEventInfo.ms_ago", TIME),
];

/// Integer formats schemars gives types of at most 32 bits.
const NARROW: &[&str] = &["uint8", "int8", "uint16", "int16", "uint32", "int32"];

/// Whether `schema` (a property's) can hold an integer wider than 32 bits, through options,
/// arrays and unions; without a `format` (MCP output schemas drop them) any integer can.
fn holds_wide_integer(schema: &Value) -> bool {
    if !schema.is_object() {
        return false;
    }
    let is_integer = match &schema["type"] {
        Value::String(t) => t == "integer",
        Value::Array(types) => types.iter().any(|t| t == "integer"),
        _ => false,
    };
    if is_integer && !NARROW.contains(&schema["format"].as_str().unwrap_or_default()) {
        return true;
    }
    let branches = ["anyOf", "oneOf", "allOf"]
        .iter()
        .filter_map(|k| schema[*k].as_array())
        .flatten();
    holds_wide_integer(&schema["items"]) || branches.into_iter().any(holds_wide_integer)
}

/// Every `Owner.property` below `schema` that can hold a wide integer; the owner is the
/// `$defs` entry holding the property, or `root` for the schema itself.
fn wide_integer_properties(schema: &Value, root: &str, out: &mut BTreeSet<String>) {
    fn walk(schema: &Value, owner: &str, out: &mut BTreeSet<String>) {
        match schema {
            Value::Object(map) => {
                for (name, property) in map
                    .get("properties")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    if holds_wide_integer(property) {
                        out.insert(format!("{owner}.{name}"));
                    }
                }
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("$defs", Value::Object(defs)) => {
                            for (name, def) in defs {
                                walk(def, name, out);
                            }
                        }
                        _ => walk(value, owner, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, owner, out)),
            _ => {}
        }
    }
    walk(schema, root, out);
}

fn schema_of<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("schema json")
}

fn allowed(location: &str) -> bool {
    NUMBERS.iter().any(|(key, _)| *key == location)
}

/// The property names of [`NUMBERS`]: the only keys whose values may reach 2^32.
fn allowed_key(key: &str) -> bool {
    NUMBERS
        .iter()
        .any(|(entry, _)| entry.rsplit('.').next() == Some(key))
}

/// Every number of `value` outside the 32-bit range (and every fraction) outside the keys of
/// [`NUMBERS`], as `path = number`.
fn wide_numbers(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if v.is_number() && allowed_key(key) {
                    continue;
                }
                wide_numbers(v, &format!("{path}.{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                wide_numbers(v, &format!("{path}[{i}]"), out);
            }
        }
        Value::Number(n)
            if !n
                .as_i64()
                .is_some_and(|n| (-(1 << 31)..1 << 32).contains(&n)) =>
        {
            out.push(format!("{path} = {n}"));
        }
        _ => {}
    }
}

/// The walks themselves: a `u64` field and a wide number are caught, 32-bit ones are not.
#[test]
fn the_walks_catch_64_bit_values() {
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Probe {
        address: u64,
        count: u32,
        offsets: Vec<Option<u64>>,
    }
    let mut found = BTreeSet::new();
    wide_integer_properties(&schema_of::<Probe>(), "Probe", &mut found);
    assert_eq!(
        found,
        ["Probe.address", "Probe.offsets"].map(String::from).into()
    );
    let mut wide = Vec::new();
    let value = json!({ "a": [1, 1u64 << 32, -1], "size": 1u64 << 40, "b": 0.5 });
    wide_numbers(&value, "x", &mut wide);
    assert_eq!(wide, ["x.a[1] = 4294967296", "x.b = 0.5"]);
}

/// The schemas of every typed result, the report and the CLI's JSON have no unlisted wide
/// integer, and every entry of [`NUMBERS`] names a real property (of these or of the MCP
/// tools' result schemas).
#[test]
fn no_result_schema_has_an_unlisted_64_bit_integer() {
    let mut found = BTreeSet::new();
    for (root, schema) in [
        ("TypedResult", schema_of::<ntdbg_commands::TypedResult>()),
        ("Report", schema_of::<ntdbg_analysis::Report>()),
        // Left out of the report's schema (tools/list budget) but serialized.
        (
            "SignatureFrame",
            schema_of::<ntdbg_analysis::signature::SignatureFrame>(),
        ),
        ("WaitFacts", schema_of::<ntdbg_analysis::hang::WaitFacts>()),
        (
            "TriageResult",
            schema_of::<ntdbg_analysis::triage::TriageResult>(),
        ),
        (
            "DumpListing",
            schema_of::<ntdbg_targets::listing::DumpListing>(),
        ),
    ] {
        wide_integer_properties(&schema, root, &mut found);
    }
    // Every MCP tool's structured result, in full (tools/list sends shallow schemas).
    for (tool, schema) in ntdbg_mcp::result_schemas() {
        wide_integer_properties(&schema, tool, &mut found);
    }
    let unlisted: Vec<&String> = found.iter().filter(|l| !allowed(l)).collect();
    assert!(
        unlisted.is_empty(),
        "64-bit integers in result schemas: {unlisted:?}; make them `0x` hex strings \
         (ntdbg_engine::hex_json) or, for counts and indexes, list them in NUMBERS with why"
    );
    let stale: Vec<&str> = NUMBERS
        .iter()
        .map(|(key, _)| *key)
        .filter(|key| !found.contains(*key))
        .collect();
    assert!(stale.is_empty(), "NUMBERS entries no schema has: {stale:?}");
}

/// Commands with a typed result that need arguments (the table's commands also run bare).
const X64_COMMANDS: &[&str] = &[
    ".ecxr",
    "k",
    "kb",
    "kv",
    "kp",
    "~*k",
    "r",
    "r rip, rsp",
    "lm",
    "~",
    "db @rsp L10",
    "dq @rsp L4",
    "dps @rsp L4",
    "u @rip L4",
    "ub @rip L2",
    "uf crashy!write_null",
    "ln @rip",
    "x crashy!mode_*",
    "? @rip",
    "? poi(@rsp)",
    ".formats @rip",
    "!error 5",
    "!address @rsp",
    "!address",
    "s -a crashy L?0x40000 \"crash\"",
    "!dh crashy",
    "!lmi crashy",
    ".frame 1",
    "dv /t /v",
    "dt _EXCEPTION_RECORD",
    "!analyze -v",
    ".exr -1",
    ".lastevent",
    "!uniqstack",
    "!gle -all",
    "!locks",
    "!waits",
];

/// The typed results of `commands` (and of every table command run bare) on one dump.
fn typed_results(
    dump: &std::path::Path,
    symbols: &std::path::Path,
    commands: &[&str],
) -> Vec<(String, Value)> {
    let mut session =
        Session::open_dump(dump, Some(&symbols.display().to_string())).expect("dump opens");
    session.symbols().set_offline(true);
    // Bare `.symfix` replaces the symbol path (the sample's images would no longer be found).
    let bare = ntdbg_commands::table::all()
        .filter_map(|c| c.names.first().copied())
        .filter(|name| *name != ".symfix");
    let mut out = Vec::new();
    for command in bare.chain(commands.iter().copied()) {
        if let Ok(output) = ntdbg_commands::run_command(&mut session, command) {
            if let Some(typed) = output.typed {
                out.push((
                    command.to_string(),
                    serde_json::to_value(typed).expect("json"),
                ));
            }
        }
    }
    let report = ntdbg_analysis::analyze(&session);
    out.push((
        "analyze".into(),
        serde_json::to_value(report).expect("json"),
    ));
    out
}

fn assert_exact(results: &[(String, Value)]) {
    let mut wide = Vec::new();
    for (command, value) in results {
        wide_numbers(value, command, &mut wide);
    }
    assert!(
        wide.is_empty(),
        "numbers beyond 32 bits in results: {wide:#?}"
    );
}

#[test]
fn typed_results_of_the_sample_have_no_wide_numbers() {
    let dump = samples().join("crashy-x64-null.dmp");
    let results = typed_results(&dump, &samples(), X64_COMMANDS);
    let kinds: BTreeSet<&str> = results
        .iter()
        .filter_map(|(_, v)| v["kind"].as_str())
        .collect();
    for kind in [
        "stack",
        "stacks",
        "registers",
        "modules",
        "threads",
        "memory",
        "disassembly",
        "value",
        "symbols",
        "analysis",
        "locals",
        "regions",
        "search_hits",
        "pe_headers",
        "event",
        "formats",
        "win32",
        "last_errors",
        "unique_stacks",
        "critical_sections",
        "waits",
    ] {
        assert!(kinds.contains(kind), "no `{kind}` result among {kinds:?}");
    }
    assert_exact(&results);
    let stack = results
        .iter()
        .find(|(c, _)| c == "k")
        .map(|(_, v)| &v["frames"][0])
        .expect("k");
    assert!(stack["instruction"]
        .as_str()
        .is_some_and(|a| a.starts_with("0x14000")));
}

#[test]
fn typed_results_of_a_kernel_dump_have_no_wide_numbers() {
    ntdbg_testutil::require_testdata!();
    let dump = ntdbg_testutil::testdata("rizin-testbins/dmp/triage_x64.dmp");
    let symbols = ntdbg_testutil::testdata("rizin-test-pdb-repository");
    let commands = [
        "k",
        "kb",
        "r",
        "lm",
        "u @rip L4",
        "dq @rsp L4",
        "ln @rip",
        ".trap",
        "!analyze -v",
    ];
    let results = typed_results(&dump, &symbols, &commands);
    assert_exact(&results);
    // Kernel addresses are above 2^53: as numbers they would be rounded.
    let frame = results
        .iter()
        .find(|(c, _)| c == "k")
        .map(|(_, v)| v["frames"][0]["instruction"].clone())
        .expect("k");
    assert!(
        frame.as_str().is_some_and(|a| a.starts_with("0xfffff80")),
        "{frame}"
    );
}

/// Every dump tool's structured result over MCP: no wide numbers either.
#[tokio::test]
async fn mcp_results_have_no_wide_numbers() {
    let client = connect(Version::Modern).await;
    let mut results = Vec::new();
    let r = call(
        &client,
        "open_dump",
        json!({ "path": samples().join("crashy-x64-null.dmp"), "include_stack": true,
                "include_modules": true, "include_threads": true }),
    )
    .await;
    let id = ok(&r)["session_id"].as_str().expect("id").to_string();
    results.push(("open_dump".to_string(), ok(&r).clone()));
    let command = ".ecxr; kb; ~*k; r; lm; ~; u @rip L4; dq @rsp L4; ln @rip; !address @rsp; dv";
    let calls: [(&'static str, Value); 6] = [
        ("analyze_crash", json!({ "session_id": id })),
        (
            "run_command",
            json!({ "session_id": id, "command": command, "format": "json" }),
        ),
        ("list_dumps", json!({})),
        ("triage_dumps", json!({})),
        ("list_sessions", json!({})),
        ("close_session", json!({ "session_id": id })),
    ];
    for (tool, args) in calls {
        let r = call(&client, tool, args).await;
        results.push((tool.to_string(), ok(&r).clone()));
    }
    client.cancel().await.expect("cancel");
    assert_exact(&results);
    let report = &results[1].1;
    assert_eq!(report["version"], ntdbg_analysis::REPORT_VERSION);
}
