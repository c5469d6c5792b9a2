//! Tasks for long tool calls: the `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28.
//!
//! A `tools/call` of a task-eligible tool ([`TASK_TOOLS`]) whose request declares the
//! extension in its per-request capabilities, at 2026-07-28 or later, is answered at once with
//! a task handle (`resultType: "task"`); the call runs on in the background and the client
//! reads its status, progress (`statusMessage`) and result with `tasks/get`, or stops it with
//! `tasks/cancel`. Older revisions, and requests that do not declare the extension, get the
//! plain result and `notifications/progress` as before ([`crate::progress`]).
//!
//! rmcp's [`TaskManager`] keeps each task's state; this module adds what ntdbg needs on top:
//!
//! - **Owners.** Each client ([`ClientId`]) has its own manager, so a task id of one client
//!   answers exactly as an id never issued (`-32602`, "unknown task") to any other.
//! - **Cancellation frees the session.** `tasks/cancel` cancels the call's engine token, as
//!   `notifications/cancelled` does for a plain call; the task reports `cancelled` only once
//!   the work has stopped and the session it held is free again. A task past its time to live
//!   ([`TASK_TTL`]) is failed by rmcp and its work stopped the same way.
//! - **Bounds.** At most [`MAX_WORKING`] tasks of one client work at a time (one more is a
//!   `too_many_tasks` tool error); at most [`MAX_KEPT`] tasks, working or finished, are kept per
//!   client: past that a call is answered directly, as for a client without tasks. A finished
//!   task's result is kept for [`TASK_TTL`] after it finished, then forgotten.

use crate::client::ClientId;
use crate::error::ToolError;
use ntdbg_engine::ErrorCode;
use rmcp::model::{CallToolResponse, CallToolResult, CreateTaskResult, DetailedTask};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskFuture, TaskManager, TaskOptions};
use rmcp::{ErrorData, RoleServer};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The tools whose calls become tasks: those that can run long and stop when cancelled.
pub const TASK_TOOLS: &[&str] = &["triage_dumps", "run_command", "analyze_crash"];
/// How long a task may work, and how long its result is kept after it finished: longer than
/// `run_command`'s longest time limit ([`crate::limits::MAX_TIMEOUT_MS`]).
pub const TASK_TTL: Duration = Duration::from_secs(15 * 60);
/// How often clients are asked to poll `tasks/get`.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// Most tasks of one client working at once.
pub const MAX_WORKING: usize = 8;
/// Most tasks (working or finished, not yet expired) kept per client.
pub const MAX_KEPT: usize = 32;

/// What a task-eligible call gets (see [`Tasks::start`]).
#[derive(Debug)]
pub enum Start {
    /// A task is working on it: answer with this handle.
    Task(CreateTaskResult),
    /// Refused: answer with this tool error.
    Refused(CallToolResult),
    /// No task: answer the call directly.
    Direct,
}

/// The tasks of every client; see the module docs.
#[derive(Default)]
pub struct Tasks {
    clients: Mutex<HashMap<ClientId, Owned>>,
    /// Answers for ids of clients that have no tasks (as rmcp answers an unknown id).
    nobody: TaskManager,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("clients", &self.lock().len())
            .finish()
    }
}

/// One client's tasks: rmcp's manager and the ids it holds.
#[derive(Default)]
struct Owned {
    manager: TaskManager,
    ids: Vec<String>,
}

impl Owned {
    /// Forgets the ids the manager no longer knows (expired); reading them sweeps the manager.
    fn prune(&mut self) {
        let manager = &self.manager;
        self.ids.retain(|id| manager.get_task(id).is_ok());
    }
}

/// Whether the call `context` belongs to may become a task: its tool is task-eligible, and the
/// request declares the Tasks extension at a revision that defines it.
pub fn eligible(tool: &str, context: &RequestContext<RoleServer>) -> bool {
    TASK_TOOLS.contains(&tool)
        && context
            .protocol_version()
            .is_some_and(|version| !version.has_initialize())
        && context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks())
}

impl Tasks {
    fn lock(&self) -> MutexGuard<'_, HashMap<ClientId, Owned>> {
        self.clients.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `work` as a task of `client`, within the bounds (see the module docs).
    pub fn start(
        &self,
        client: &ClientId,
        tool: &str,
        work: impl FnOnce(TaskContext) -> TaskFuture,
    ) -> Start {
        let mut clients = self.lock();
        let owned = clients.entry(client.clone()).or_default();
        owned.prune();
        let working = owned.manager.running_task_count();
        if working >= MAX_WORKING {
            let error = ToolError::new(
                ErrorCode::from_name("too_many_tasks"),
                format!("{working} tasks of this client are working (at most {MAX_WORKING})"),
            )
            .with_hint("wait for one to finish (tasks/get) or cancel one (tasks/cancel)");
            return Start::Refused(error.into_result());
        }
        if owned.ids.len() >= MAX_KEPT {
            return Start::Direct;
        }
        let options = TaskOptions::new()
            .with_ttl_ms(millis(TASK_TTL))
            .with_poll_interval_ms(millis(POLL_INTERVAL))
            .with_status_message(format!("{tool}: working"));
        let task = owned.manager.spawn(options, work);
        owned.ids.push(task.task_id.clone());
        Start::Task(CreateTaskResult::new(task))
    }

    /// `tasks/get`: the task `id` of `client`, with its result once finished.
    pub fn get(&self, client: &ClientId, id: &str) -> Result<DetailedTask, ErrorData> {
        match self.lock().get(client) {
            Some(owned) => owned.manager.get_task(id),
            None => self.nobody.get_task(id),
        }
    }

    /// `tasks/cancel`: asks the task `id` of `client` to stop (it reports `cancelled` once its
    /// work has stopped).
    pub fn cancel(&self, client: &ClientId, id: &str) -> Result<(), ErrorData> {
        match self.lock().get(client) {
            Some(owned) => owned.manager.cancel_task(id),
            None => self.nobody.cancel_task(id),
        }
    }

    /// `tasks/update`: ntdbg's tasks never ask for input, so this only tells a known id from
    /// an unknown one.
    pub fn update(&self, client: &ClientId, id: &str) -> Result<(), ErrorData> {
        match self.lock().get(client) {
            Some(owned) => owned.manager.update_task(id, []),
            None => self.nobody.update_task(id, []),
        }
    }

    /// Forgets expired tasks, and the clients left with none (run by the idle sweeper).
    pub fn sweep(&self) {
        self.lock().retain(|_, owned| {
            owned.prune();
            !owned.ids.is_empty()
        });
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The body of a task: the call `answer` makes of `context`, given the task's own cancellation
/// token and status sink, until it ends or `tasks/cancel` stops it. A cancelled task settles
/// only once the call has returned (its session is free again); a task aborted at its time to
/// live cancels the call's engine token as it goes.
pub fn run<F, Fut>(
    task: TaskContext,
    mut context: RequestContext<RoleServer>,
    answer: F,
) -> TaskFuture
where
    F: FnOnce(RequestContext<RoleServer>) -> Fut,
    Fut: Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'static,
{
    let stop = CancellationToken::new();
    context.ct = stop.clone();
    context.extensions.insert(StatusSink(task.clone()));
    let work = answer(context);
    Box::pin(async move {
        let _stop_when_dropped = stop.clone().drop_guard();
        tokio::pin!(work);
        let response = tokio::select! {
            response = &mut work => response?,
            () = task.cancelled() => {
                stop.cancel();
                let _ = work.await;
                return Err(TaskExit::Cancelled);
            }
        };
        match response {
            CallToolResponse::Complete(result) => Ok(result),
            _ => Err(TaskExit::Error(ErrorData::internal_error(
                "the tool answered a task with something other than a result",
                None,
            ))),
        }
    })
}

/// Where a task's engine progress goes: its status message, as `tasks/get` shows it.
#[derive(Clone)]
pub struct StatusSink(pub TaskContext);

impl StatusSink {
    /// Shows a progress report: `analysing dumps: 3 of 10`.
    pub fn report(&self, progress: u64, total: Option<u64>, message: &str) {
        let text = match total {
            Some(total) => format!("{message}: {progress} of {total}"),
            None => format!("{message}: {progress}"),
        };
        self.0.set_status_message(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock, TaskStatus};

    fn pending(tasks: &Tasks, client: &ClientId) -> Start {
        tasks.start(client, "run_command", |task| {
            Box::pin(async move {
                task.cancelled().await;
                Err(TaskExit::Cancelled)
            })
        })
    }

    fn id(start: Start) -> String {
        match start {
            Start::Task(created) => created.task.task_id,
            other => panic!("expected a task, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_task_of_one_client_is_unknown_to_another() {
        let tasks = Tasks::default();
        let (a, b) = (ClientId::Stdio, ClientId::TokenHolder);
        let task = id(pending(&tasks, &a));
        assert!(tasks.get(&a, &task).is_ok());
        let foreign = tasks.get(&b, &task).expect_err("b does not know a's task");
        let never = tasks.get(&b, "never-issued").expect_err("unknown");
        assert_eq!(foreign.code, never.code);
        assert_eq!(
            foreign.message.replace(&task, "ID"),
            never.message.replace("never-issued", "ID")
        );
        assert!(tasks.cancel(&b, &task).is_err() && tasks.update(&b, &task).is_err());
        tasks.cancel(&a, &task).expect("a may cancel its task");
    }

    #[tokio::test]
    async fn working_tasks_are_bounded_and_kept_ones_fall_back_to_direct_answers() {
        let tasks = Tasks::default();
        let client = ClientId::Stdio;
        let ids: Vec<String> = (0..MAX_WORKING)
            .map(|_| id(pending(&tasks, &client)))
            .collect();
        match pending(&tasks, &client) {
            Start::Refused(result) => {
                let error = result.structured_content.expect("a typed error");
                assert_eq!(error["code"], "too_many_tasks");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        for task in &ids {
            tasks.cancel(&client, task).expect("cancel");
        }
        for task in &ids {
            while !tasks.get(&client, task).expect("kept").status().is_terminal() {
                tokio::task::yield_now().await;
            }
            assert_eq!(tasks.get(&client, task).expect("kept").status(), TaskStatus::Cancelled);
        }
        let finished = |_: TaskContext| -> TaskFuture {
            Box::pin(async { Ok(CallToolResult::success(vec![ContentBlock::text("done")])) })
        };
        // Finished tasks stay kept: once MAX_KEPT are, calls are answered directly.
        loop {
            match tasks.start(&client, "run_command", finished) {
                Start::Direct => break,
                Start::Task(_) | Start::Refused(_) => tokio::task::yield_now().await,
            }
        }
        assert_eq!(tasks.lock()[&client].ids.len(), MAX_KEPT);
    }
}
