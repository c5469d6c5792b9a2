//! `windbg_output` pages a command's whole output from the server's output cache (the one
//! `read_output` reads) by byte offset; `windbg_exec` runs a raw command line and answers its
//! text, with no envelope.

use super::args::{count, ExecArgs, OutputArgs};
use super::envelope::{Envelope, Reply, Stage};
use super::run::timeout_ms;
use crate::Host;
use ntdbg_mcp::dto::{CommandStatus, OutputFormat, RunCommandParams};
use ntdbg_mcp::floor_char;
use rmcp::model::{CallToolResult, ContentBlock};

/// Largest page `windbg_output` returns.
const MAX_PAGE: u64 = 0x8000;

impl Host {
    pub(super) async fn cs_output(&self, a: OutputArgs) -> Envelope {
        let mut reply = Reply::new("windbg_output");
        let id = a.command_id.trim().to_string();
        if id.is_empty() {
            reply.error(
                "invalid_argument",
                "'command_id' is required.",
                Stage::Input,
                true,
            );
            return reply.finish();
        }
        let limits = (
            count(&a.offset, "offset", Some(0), 0, 1_000_000),
            count(&a.limit, "limit", Some(0x2000), 1, MAX_PAGE),
        );
        let (offset, limit) = match limits {
            (Ok(o), Ok(l)) => (o, l),
            (o, l) => {
                for e in [o.err(), l.err()].into_iter().flatten() {
                    reply.error(&e.code, e.message, e.stage, e.recoverable);
                }
                return reply.finish();
            }
        };
        reply.set("command_id", id.clone());
        let entry = match self.api().output(&id) {
            Ok(entry) => entry,
            Err(e) => {
                reply.error("evidence_not_found", e.message, Stage::Output, true);
                return reply.finish();
            }
        };
        let text = entry.text.as_str();
        let size = text.len();
        let start = floor_char(
            text,
            usize::try_from(offset).unwrap_or(usize::MAX).min(size),
        );
        let end = floor_char(
            text,
            start
                .saturating_add(usize::try_from(limit).unwrap_or(usize::MAX))
                .min(size),
        );
        let chunk = &text[start..end];
        reply
            .set("command", entry.command.clone())
            .set("offset", start)
            .set("next_offset", end)
            .set("returned_size", chunk.len())
            .set("stored_size", size)
            .set("original_size", size)
            .set("has_more", end < size)
            .set("output", chunk);
        reply.finish()
    }

    /// `windbg_exec`: the raw text of every command of the line, an error as `error: …`, as
    /// Windbg-MCP answers it: always a plain text result (its errors are text too, not
    /// `isError`, which this server keeps for arguments that do not fit the schema).
    pub(super) async fn cs_exec(&self, a: ExecArgs) -> CallToolResult {
        let mut probe = Reply::new("windbg_exec");
        let Some(target) = self.chensiling_target(&mut probe) else {
            let message = probe
                .finish()
                .errors
                .into_iter()
                .map(|e| e.message)
                .collect::<Vec<_>>();
            return CallToolResult::success(vec![ContentBlock::text(format!(
                "error: {}",
                message.join("; ")
            ))]);
        };
        let params = RunCommandParams {
            session_id: target.id,
            command: a.command,
            timeout_ms: Some(timeout_ms()),
            format: OutputFormat::Text,
            output_file: None,
            on_error: None,
        };
        let batch = match self.api().run_batch(params).await {
            Ok(batch) => batch,
            Err(e) => {
                return CallToolResult::success(vec![ContentBlock::text(format!(
                    "error: {}",
                    e.render()
                ))]);
            }
        };
        let mut text = String::new();
        for (r, full) in batch.rendered.value.results.iter().zip(&batch.full) {
            match r.status {
                CommandStatus::Succeeded => text.push_str(&full.text),
                CommandStatus::NotExecuted if full.thread.is_none() => {
                    text.push_str(&format!("(not executed: {})\n", r.command));
                }
                _ => {
                    let detail = r.error.as_ref().map_or_else(
                        || format!("command ended with status '{:?}'", r.status),
                        ntdbg_mcp::ToolError::render,
                    );
                    text.push_str(&format!("error: {detail}\n"));
                }
            }
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
        }
        CallToolResult::success(vec![ContentBlock::text(text)])
    }
}
