//! `query_crashes`: the crash database of `ntdbg mcp --db` (read-only), asked what
//! `ntdbg crashes` answers. Listed only when the server has a database.

use crate::dto::OutputFormat;
use crate::error::ToolError;
use crate::rendered::Rendered;
use crate::server::NtdbgServer;
use crate::state::{blocking, State};
use ntdbg_engine::ErrorCode;
use ntdbg_store::{
    parse_time, CrashQuery, CrashesAnswer, DbLocation, ModuleVersions, NewSince, Store,
    StoredTriage,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;

const QUERY_CRASHES: &str = "Query the crash database: top buckets in a period, new ones, a bucket's dumps (for open_dump), or counts per module version.";

/// Buckets listed when `top` is not given.
const DEFAULT_TOP: usize = 20;

/// `query_crashes` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryCrashesParams {
    /// Dumps seen since: 2026-11-30, 7d, 12h.
    pub since: Option<String>,
    /// And until.
    pub until: Option<String>,
    /// Only buckets new since a time, or a module version.
    pub new_since: Option<String>,
    /// One bucket: signature or part.
    pub bucket: Option<String>,
    /// Counts per version of this module.
    pub module: Option<String>,
    /// Buckets listed (default 20).
    pub top: Option<usize>,
    /// "json" adds the typed answer.
    #[serde(default)]
    pub format: OutputFormat,
}

/// The typed answer: buckets (the shape of `triage_dumps`), or counts per module version.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum QueryCrashesResult {
    /// Buckets.
    Buckets(StoredTriage),
    /// Counts per module version.
    Modules(ModuleVersions),
}

#[tool_router(router = crash_store_tools, vis = "pub(crate)")]
impl NtdbgServer {
    #[tool(
        input_schema = crate::schema::input::<QueryCrashesParams>(),
        description = QUERY_CRASHES,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn query_crashes(
        &self,
        Parameters(p): Parameters<QueryCrashesParams>,
    ) -> Result<Rendered<QueryCrashesResult>, ToolError> {
        query_crashes(self.state(), p).await
    }
}

/// Answers `p` from the server's crash database.
pub async fn query_crashes(
    state: &Arc<State>,
    p: QueryCrashesParams,
) -> Result<Rendered<QueryCrashesResult>, ToolError> {
    let Some(location) = state.crash_store.clone() else {
        return Err(
            ToolError::new(ErrorCode::NotAvailable, "this server has no crash database")
                .with_hint("start it with `ntdbg mcp --db FILE|URL`"),
        );
    };
    let now = ntdbg_store::now();
    let time = |t: Option<String>| {
        t.map(|t| parse_time(&t, now))
            .transpose()
            .map_err(|e| ToolError::new(ErrorCode::InvalidArgument, e.to_string()))
    };
    let query = CrashQuery {
        since: time(p.since)?,
        until: time(p.until)?,
        new_since: p.new_since.map(|n| NewSince::parse(&n, now)),
        bucket: p.bucket,
        module: p.module,
        top: Some(p.top.unwrap_or(DEFAULT_TOP)),
    };
    let text_only = p.format == OutputFormat::Text;
    let st = state.clone();
    let answer = blocking("querying the crash database", move || {
        ask(&location, &query).map(|a| openable(a, &st))
    })
    .await?;
    let text = match &answer {
        QueryCrashesResult::Buckets(b) => crate::tools::dumps::triage_text(b, Path::new("")),
        QueryCrashesResult::Modules(m) => versions_text(m),
    };
    Ok(Rendered::new(answer, text).text_only(text_only))
}

fn ask(location: &DbLocation, query: &CrashQuery) -> Result<CrashesAnswer, ToolError> {
    let mut store =
        Store::open(location).map_err(|e| ToolError::new(ErrorCode::IoError, e.to_string()))?;
    store.crashes(query).map_err(|e| {
        let code = if e.transient {
            ErrorCode::IoError
        } else {
            ErrorCode::InvalidArgument
        };
        ToolError::new(code, e.to_string())
    })
}

/// The answer with each bucket's dumps limited to those open_dump may open here (the count
/// stays the bucket's size).
fn openable(answer: CrashesAnswer, state: &State) -> QueryCrashesResult {
    match answer {
        CrashesAnswer::Modules(m) => QueryCrashesResult::Modules(m),
        CrashesAnswer::Buckets(mut b) => {
            for bucket in &mut b.buckets {
                bucket
                    .dumps
                    .retain(|d| state.allowed.check_existing(Path::new(d)).is_ok());
            }
            QueryCrashesResult::Buckets(b)
        }
    }
}

fn versions_text(m: &ModuleVersions) -> String {
    let mut text = format!("{}: {} version(s)\n", m.module, m.versions.len());
    for v in &m.versions {
        let _ = writeln!(
            text,
            "{:>5} dump(s), {} bucket(s)  {}",
            v.dumps, v.buckets, v.version
        );
    }
    text
}
