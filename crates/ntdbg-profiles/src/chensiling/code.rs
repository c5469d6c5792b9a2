//! `windbg_disassemble`, `windbg_evaluate`, `windbg_lookup`, `windbg_read_memory` and
//! `windbg_module`: code, values, symbols and memory from the typed results of `?`, `u`,
//! `uf`, `ln`, `x`, `d*` and `lm`. Addresses are resolved first and answered as the
//! `input` / `resolved_address` pair.

use super::args::{
    count, intent_text, DisassembleArgs, EvaluateArgs, LookupArgs, LookupKind, ModuleArgs,
    ReadMemoryArgs,
};
use super::envelope::{args, CoreResult, Envelope, Reply, Stage};
use super::run::Target;
use crate::Host;
use serde_json::{json, Value};

/// Records an argument error and says whether there was one.
fn refused(reply: &mut Reply, checks: &[Result<(), super::envelope::EnvelopeError>]) -> bool {
    for e in checks.iter().filter_map(|c| c.as_ref().err()) {
        reply.error(&e.code, e.message.clone(), e.stage, e.recoverable);
    }
    reply.has_errors()
}

/// The limitation (and, with nothing read at all, the error) of a range the target lacks.
fn missing_range(reply: &mut Reply, target: &Target, what: &str, path: &str, nothing: bool) {
    let dump = target.session_kind().ends_with("_dump");
    let (code, message) = if dump {
        (
            "dump_data_unavailable",
            format!("The dump did not capture the complete {what}."),
        )
    } else {
        (
            "memory_access_error",
            format!("The target could not provide the complete {what}."),
        )
    };
    reply.limitation(code, message.clone(), Some(path));
    if nothing {
        reply
            .error(code, message, Stage::Target, true)
            .core(CoreResult::Unavailable);
    }
}

/// Windbg-MCP's routing of `kind: auto`: the route and why.
fn auto_route(what: &str) -> (LookupKind, &'static str) {
    let cleaned = what.replace('`', "").to_ascii_lowercase();
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    if cleaned.strip_prefix("0x").is_some_and(hex) || (cleaned.len() >= 8 && hex(&cleaned)) {
        return (LookupKind::Address, "input is a hexadecimal address");
    }
    if what.starts_with('@')
        || ["poi(", "dwo(", "qwo("]
            .iter()
            .any(|p| cleaned.starts_with(p))
    {
        return (
            LookupKind::Address,
            "input is a debugger address expression",
        );
    }
    if what.contains(['*', '?']) {
        return (LookupKind::Symbol, "input contains a symbol wildcard");
    }
    let base = what.rsplit('!').next().unwrap_or(what);
    if let Some(rest) = base.strip_prefix('_') {
        if !rest.is_empty() && rest.to_ascii_uppercase() == rest {
            return (
                LookupKind::Type,
                "input matches a conventional debugger type name",
            );
        }
    }
    (LookupKind::Symbol, "default symbol-search route")
}

impl Host {
    pub(super) async fn cs_disassemble(&self, a: DisassembleArgs) -> Envelope {
        let mut reply = Reply::new("windbg_disassemble");
        let n = count(&a.count, "count", Some(8), 1, 128);
        if refused(
            &mut reply,
            &[intent_text(&a.at, "at", true), n.clone().map(|_| ())],
        ) {
            return reply.finish();
        }
        let n = n.unwrap_or(8);
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        reply.set("input", a.at.clone()).set("count", n);
        let Some(address) = self
            .chensiling_resolve(&target, &a.at, false, &mut reply)
            .await
        else {
            return reply.finish();
        };
        reply.set("resolved_address", address.clone());
        let command = format!("u {address} L0n{n}");
        let ran = self
            .chensiling_run(&target, &[command], false, &mut reply)
            .await;
        let Some(listing) = ran.first().filter(|r| r.ok) else {
            return reply.finish();
        };
        let all: Vec<&Value> = listing
            .get("instructions")
            .and_then(Value::as_array)
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        let readable: Vec<Value> = all
            .iter()
            .filter(|i| i.get("readable").and_then(Value::as_bool) != Some(false))
            .map(|i| {
                let mnemonic = i.get("mnemonic").and_then(Value::as_str).unwrap_or("");
                let operands = i.get("operands").and_then(Value::as_str).unwrap_or("");
                json!({
                    "address": i.get("address"),
                    "bytes": i.get("bytes"),
                    "instruction": format!("{mnemonic} {operands}").trim_end(),
                    "symbol": i.get("label"),
                })
            })
            .collect();
        let complete = readable.len() == all.len();
        let returned = readable.len();
        reply
            .set("instructions", readable)
            .set("available", returned > 0)
            .set("complete_range", complete)
            .set("returned_count", returned)
            .set(
                "range_complete",
                complete && u64::try_from(returned).ok() == Some(n),
            );
        if !complete {
            missing_range(
                &mut reply,
                &target,
                "instruction range",
                "data.instructions",
                returned == 0,
            );
        }
        reply.finish()
    }

    pub(super) async fn cs_evaluate(&self, a: EvaluateArgs) -> Envelope {
        let mut reply = Reply::new("windbg_evaluate");
        if refused(
            &mut reply,
            &[intent_text(&a.expression, "expression", true)],
        ) {
            return reply.finish();
        }
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        reply.set("input", a.expression.clone());
        let command = format!("? {}", a.expression.trim());
        let ran = self
            .chensiling_run(&target, &[command], false, &mut reply)
            .await;
        if let Some(value) = ran.first().filter(|r| r.ok) {
            reply.set("value", value.get("hex").cloned().unwrap_or(Value::Null));
            reply.set(
                "decimal",
                value.get("decimal").cloned().unwrap_or(Value::Null),
            );
        }
        reply.finish()
    }

    pub(super) async fn cs_lookup(&self, a: LookupArgs) -> Envelope {
        let mut reply = Reply::new("windbg_lookup");
        if refused(&mut reply, &[intent_text(&a.what, "what", true)]) {
            return reply.finish();
        }
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        let what = a.what.trim().to_string();
        let route = if a.kind == LookupKind::Auto {
            let (route, basis) = auto_route(&what);
            reply.inference("lookup_routing", route_name(route), basis);
            route
        } else {
            a.kind
        };
        reply
            .set("input", what.clone())
            .set("kind", route_name(route));
        let command = match route {
            LookupKind::Address | LookupKind::Auto => {
                let Some(address) = self
                    .chensiling_resolve(&target, &what, false, &mut reply)
                    .await
                else {
                    return reply.finish();
                };
                reply.set("resolved_address", address.clone());
                format!("ln {address}")
            }
            LookupKind::Symbol => format!("x {what}"),
            LookupKind::Type => format!("dt {what}"),
            LookupKind::Function => format!("uf {what}"),
        };
        let ran = self
            .chensiling_run(&target, &[command], false, &mut reply)
            .await;
        let Some(found) = ran.first().filter(|r| r.ok) else {
            return reply.finish();
        };
        match route {
            LookupKind::Type => {
                // `dt TYPE` has no typed result: its layout is in the source's output.
                reply.set("found", true);
                reply.next(
                    "windbg_output",
                    args([("command_id", found.command_id.as_str())]),
                    "dt's layout is text: read it from the command's output.",
                );
            }
            LookupKind::Function => {
                let instructions = found
                    .get("instructions")
                    .cloned()
                    .unwrap_or_else(|| json!([]));
                let any = instructions.as_array().is_some_and(|i| !i.is_empty());
                reply.set("found", any).set("instructions", instructions);
                if !any {
                    reply.core(CoreResult::Empty);
                }
            }
            _ => {
                let symbols = found.get("symbols").cloned().unwrap_or_else(|| json!([]));
                let list = symbols.as_array().cloned().unwrap_or_default();
                reply.set("found", !list.is_empty());
                if route != LookupKind::Symbol {
                    if let Some(first) = list.first() {
                        reply.set("symbol", first.clone());
                    }
                }
                if list.len() > 50 {
                    reply.next(
                        "windbg_lookup",
                        args([("what", what.as_str()), ("kind", "symbol")]),
                        "Narrow the symbol pattern to reduce matches.",
                    );
                }
                reply.set("symbols", symbols);
                if list.is_empty() {
                    reply.core(CoreResult::Empty);
                }
            }
        }
        reply.finish()
    }

    pub(super) async fn cs_read_memory(&self, a: ReadMemoryArgs) -> Envelope {
        let mut reply = Reply::new("windbg_read_memory");
        let size = count(&a.size, "size", Some(0x20), 1, 0x400);
        if refused(
            &mut reply,
            &[
                intent_text(&a.address, "address", true),
                size.clone().map(|_| ()),
            ],
        ) {
            return reply.finish();
        }
        let size = size.unwrap_or(0x20);
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        let (format, display) = a.format.command();
        reply
            .set("input", a.address.clone())
            .set("requested_format", format)
            .set("requested_size", size);
        let Some(address) = self
            .chensiling_resolve(&target, &a.address, false, &mut reply)
            .await
        else {
            return reply.finish();
        };
        reply.set("resolved_address", address.clone());
        let command = format!("{display} {address} L0n{size}");
        let ran = self
            .chensiling_run(&target, &[command], false, &mut reply)
            .await;
        let Some(memory) = ran.first().filter(|r| r.ok) else {
            return reply.finish();
        };
        let unit = memory.get("unit").and_then(Value::as_u64).unwrap_or(1);
        let values: Vec<Option<String>> = memory
            .get("values")
            .and_then(Value::as_array)
            .map(|v| v.iter().map(|x| x.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        // The readable prefix: a dump's hole ends the data, as a `??` does WinDbg's.
        let mut entries = Vec::new();
        for (i, value) in values.iter().enumerate() {
            let Some(value) = value else { break };
            let mut entry = json!({
                "offset": format!("0x{:x}", i as u64 * unit),
                "value": value,
            });
            if unit == 1 {
                let byte = u8::from_str_radix(value.trim_start_matches("0x"), 16).unwrap_or(0);
                let shown = if byte.is_ascii_graphic() || byte == b' ' {
                    byte as char
                } else {
                    '.'
                };
                entry["ascii"] = json!(shown.to_string());
            }
            entries.push(entry);
        }
        let hole = entries.len() < values.len();
        let returned = entries.len();
        // `da` stops at the string's end: fewer elements than asked is not a hole there.
        let complete = !hole && (format == "ascii" || u64::try_from(returned).ok() == Some(size));
        reply
            .set(
                "address",
                memory.get("address").cloned().unwrap_or(Value::Null),
            )
            .set("format", format)
            .set("unit_size", unit)
            .set("data", entries)
            .set("available", returned > 0)
            .set("complete_range", !hole)
            .set("returned_size", returned)
            .set("range_complete", complete);
        if let Some(from_image) = memory.get("from_image") {
            reply.set("from_image", from_image.clone());
            reply.limitation(
                "read_from_image_file",
                "Some bytes are not in the dump: they were read from the module's image file.",
                Some("data.data"),
            );
        }
        if hole {
            missing_range(
                &mut reply,
                &target,
                "memory range",
                "data.data",
                returned == 0,
            );
        }
        reply.finish()
    }

    pub(super) async fn cs_module(&self, a: ModuleArgs) -> Envelope {
        let mut reply = Reply::new("windbg_module");
        if refused(&mut reply, &[module_name(&a.module)]) {
            return reply.finish();
        }
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        let name = a.module.trim().to_string();
        reply.set("input", name.clone());
        let command = format!("lmv m {name}");
        let ran = self
            .chensiling_run(
                &target,
                &[command],
                a.include_raw.unwrap_or(false),
                &mut reply,
            )
            .await;
        let Some(listing) = ran.first().filter(|r| r.ok) else {
            return reply.finish();
        };
        match listing
            .get("modules")
            .and_then(Value::as_array)
            .and_then(|m| m.first())
        {
            Some(module) => {
                reply.set("found", true).set("module", module.clone());
            }
            None => {
                reply
                    .set("found", false)
                    .set("module", json!({}))
                    .core(CoreResult::Empty);
            }
        }
        reply.finish()
    }
}

/// One module name: letters, digits, `_ . $ @ -`, as Windbg-MCP accepts (no flags, no
/// second argument).
pub(super) fn module_name(name: &str) -> Result<(), super::envelope::EnvelopeError> {
    let t = name.trim();
    let first_ok = t
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || "_.$@".contains(c));
    let ok = first_ok
        && t.len() <= 128
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.$@-".contains(c));
    if ok {
        return Ok(());
    }
    Err(super::envelope::EnvelopeError {
        code: "invalid_argument".into(),
        message: if t.is_empty() {
            "'module' is required.".into()
        } else {
            "'module' must be one module name using letters, digits, underscore, dot, dollar, at-sign, or hyphen.".into()
        },
        stage: Stage::Input,
        recoverable: true,
    })
}

/// The route's name in the answer.
fn route_name(kind: LookupKind) -> &'static str {
    match kind {
        LookupKind::Auto => "auto",
        LookupKind::Address => "address",
        LookupKind::Symbol => "symbol",
        LookupKind::Type => "type",
        LookupKind::Function => "function",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_lookup_routes_as_windbg_mcp_does() {
        assert_eq!(auto_route("0x140001517").0, LookupKind::Address);
        assert_eq!(auto_route("00000001`40001517").0, LookupKind::Address);
        assert_eq!(auto_route("@rip").0, LookupKind::Address);
        assert_eq!(auto_route("crashy!write*").0, LookupKind::Symbol);
        assert_eq!(auto_route("nt!_EPROCESS").0, LookupKind::Type);
        assert_eq!(auto_route("crashy!main").0, LookupKind::Symbol);
    }

    #[test]
    fn module_names_are_one_token() {
        assert!(module_name("crashy").is_ok());
        assert!(module_name("ntdll.dll").is_ok());
        assert!(module_name("-v crashy").is_err());
        assert!(module_name("a b").is_err());
        assert!(module_name("").is_err());
    }
}
