//! `query_crashes`: the crash database of `ntdbg mcp --db` (read-only), asked what
//! `ntdbg crashes` answers. Listed only when the server has a database.

use crate::dto::OutputFormat;
use crate::error::ToolError;
use crate::rendered::Rendered;
use crate::state::{blocking, State};
use ntdbg_engine::ErrorCode;
use ntdbg_objects::{keys, ObjectUrl, Objects, StoreUrl};
use ntdbg_store::{
    parse_time, CrashQuery, CrashesAnswer, DbLocation, ModuleVersions, NewSince, Store,
    StoredTriage,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) const QUERY_CRASHES: &str = "Query the crash database: top buckets in a period, new ones, a bucket's dumps or crash ids (for open_dump), or counts per module version.";

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
        QueryCrashesResult::Buckets(b) => crate::triage_text::triage_text(b, Path::new("")),
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

/// The answer with each bucket's dumps limited to those open_dump may open here: files in
/// an allowed folder, and dumps kept in an object store as their crash ids (the count stays
/// the bucket's size).
fn openable(answer: CrashesAnswer, state: &State) -> QueryCrashesResult {
    match answer {
        CrashesAnswer::Modules(m) => QueryCrashesResult::Modules(m),
        CrashesAnswer::Buckets(mut b) => {
            for bucket in &mut b.buckets {
                bucket.dumps = std::mem::take(&mut bucket.dumps)
                    .into_iter()
                    .filter_map(|d| match ObjectUrl::parse(&d) {
                        Some(object) => keys::hash_of_dump_key(&object.key).map(str::to_string),
                        None => state
                            .allowed
                            .check_existing(Path::new(&d))
                            .is_ok()
                            .then_some(d),
                    })
                    .collect();
            }
            QueryCrashesResult::Buckets(b)
        }
    }
}

/// `open_dump(path=CRASH_ID)`: when `text` is a crash id (the dump's SHA-256, as
/// `query_crashes` and the crash-stats page give it) and the server has a crash database,
/// the dump as a local file — in its store's folder, or fetched from an S3 store into the
/// user's cache — and the store whose uploaded symbols it is analysed with. `None`: `text`
/// is a path.
pub(crate) async fn stored_dump(
    state: &Arc<State>,
    text: &str,
) -> Result<Option<(PathBuf, Option<StoreUrl>)>, ToolError> {
    let id = text.trim().to_ascii_lowercase();
    let Some(location) = state.crash_store.clone() else {
        return Ok(None);
    };
    if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let st = state.clone();
    blocking("finding the crash", move || {
        let mut store = Store::open(&location)
            .map_err(|e| ToolError::new(ErrorCode::IoError, e.to_string()))?;
        let where_ = store
            .dump_location(&id)
            .map_err(|e| ToolError::new(ErrorCode::IoError, e.to_string()))?
            .ok_or_else(|| {
                ToolError::new(
                    ErrorCode::FileNotFound,
                    format!("no crash {id} in the crash database"),
                )
                .with_hint("query_crashes lists the crash ids of each bucket")
            })?;
        let Some(object) = ObjectUrl::parse(&where_) else {
            // An ingested file: opened only from an allowed folder, as any path.
            return Ok(Some((st.allowed.check_existing(Path::new(&where_))?, None)));
        };
        let file = match object.store.local_dir() {
            Some(dir) => dir.join(&object.key),
            None => fetch_to_cache(&object, &id)?,
        };
        Ok(Some((file, Some(object.store))))
    })
    .await
}

/// Largest dump fetched from a store for `open_dump`.
const MAX_FETCHED_DUMP: u64 = 64 << 30;

/// The dump at `object`, fetched (once) into the user's cache as `ID.dmp`.
fn fetch_to_cache(object: &ObjectUrl, id: &str) -> Result<PathBuf, ToolError> {
    let io = |e: String| ToolError::new(ErrorCode::IoError, e);
    let dir = ntdbg_symbols::default_cache_dir()
        .parent()
        .map(|p| p.join("crashes"))
        .unwrap_or_else(|| std::env::temp_dir().join("ntdbg-crashes"));
    let file = dir.join(format!("{id}.dmp"));
    if file.is_file() {
        return Ok(file);
    }
    std::fs::create_dir_all(&dir).map_err(|e| io(format!("{}: {e}", dir.display())))?;
    let partial = dir.join(format!(".{id}.{}.part", std::process::id()));
    let objects = Objects::open(&object.store).map_err(|e| io(e.message))?;
    match objects.download_blocking(&object.key, &partial, MAX_FETCHED_DUMP) {
        Ok(Some(_)) => match std::fs::rename(&partial, &file) {
            Ok(()) => Ok(file),
            Err(e) => Err(io(format!("{}: {e}", file.display()))),
        },
        Ok(None) => Err(ToolError::new(
            ErrorCode::FileNotFound,
            format!("crash {id}: its dump is no longer in {}", object.store),
        )),
        Err(e) => Err(io(e.message)),
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
