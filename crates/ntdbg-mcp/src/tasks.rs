//! Tasks for long tool calls: the `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28.
//!
//! A `tools/call` of a task-eligible tool ([`TASK_TOOLS`]) whose request declares the
//! extension in its per-request capabilities, at 2026-07-28 or later, starts at once; if it
//! ends within [`DIRECT_WITHIN`] its result is the answer, as for any call, else the answer is
//! a task handle (`resultType: "task"`): the call runs on in the background and the client
//! reads its status, progress (`statusMessage`) and result with `tasks/get`, or stops it with
//! `tasks/cancel`. So a `k` costs no extra round trip, and a `g` that waits, a long `s` or a
//! folder's triage become tasks. Older revisions, and requests that do not declare the
//! extension, get the plain result and `notifications/progress` as before
//! ([`crate::progress`]).
//!
//! rmcp's [`TaskManager`] keeps each task's state; this module adds what ntdbg needs on top:
//!
//! - **Owners.** Each client ([`ClientId`]) has its own manager, so a task id of one client
//!   answers exactly as an id never issued (`-32602`, "unknown task") to any other.
//! - **Cancellation frees the session.** `tasks/cancel` cancels the call's engine token, as
//!   `notifications/cancelled` does for a plain call; the task reports `cancelled` only once
//!   the work has stopped and the session it held is free again. A task past its time to live
//!   ([`TASK_TTL`]) is failed by rmcp and its work stopped the same way.
//! - **Bounds.** At most [`MAX_WORKING`] tasks of one client work at a time (a call made while
//!   that many work is a `too_many_tasks` tool error); at most [`MAX_KEPT`] tasks, working or
//!   finished, are kept per client: past that a call is answered directly, as for a client
//!   without tasks. A finished task's result is kept for [`TASK_TTL`] after it finished.

use crate::client::ClientId;
use crate::error::ToolError;
use ntdbg_engine::ErrorCode;
use rmcp::model::{CallToolResponse, CallToolResult, CreateTaskResult, DetailedTask};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData, RoleServer};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::task::{JoinError, JoinHandle};
use tokio_util::sync::CancellationToken;

/// The tools whose calls become tasks: those that can run long and stop when cancelled.
pub const TASK_TOOLS: &[&str] = &["triage_dumps", "run_command", "analyze_crash"];
/// How long a task may work, and how long its result is kept after it finished: longer than
/// `run_command`'s longest time limit ([`crate::limits::MAX_TIMEOUT_MS`]).
pub const TASK_TTL: Duration = Duration::from_secs(15 * 60);
/// A call that ends within this time is answered directly, not with a task.
pub const DIRECT_WITHIN: Duration = Duration::from_millis(200);
/// How often clients are asked to poll `tasks/get`.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// Most tasks of one client working at once.
pub const MAX_WORKING: usize = 8;
/// Most tasks (working or finished, not yet expired) kept per client.
pub const MAX_KEPT: usize = 32;

/// Whether a task-eligible call may become a task (see [`Tasks::admit`]).
#[derive(Debug)]
pub enum Admit {
    /// It may: start it and see whether it ends in time.
    Task,
    /// Refused: answer with this tool error.
    Refused(CallToolResult),
    /// No task: answer the call directly.
    Direct,
}

/// The answer of one call, as the work task returns it.
type Answer = Result<CallToolResponse, ErrorData>;

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

    /// Whether a call of `client` may become a task, within the bounds (see the module docs).
    pub fn admit(&self, client: &ClientId) -> Admit {
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
            return Admit::Refused(error.into_result());
        }
        if owned.ids.len() >= MAX_KEPT {
            return Admit::Direct;
        }
        Admit::Task
    }

    /// Runs an admitted call of `client`: `answer` starts its work with the call's own
    /// cancellation token and status sink. The answer is the call's result when it ends within
    /// [`DIRECT_WITHIN`] (or when `request`, the request's token, cancels it first), else a
    /// task that follows it.
    pub async fn call<F, Fut>(
        &self,
        client: &ClientId,
        tool: &str,
        request: CancellationToken,
        answer: F,
    ) -> Answer
    where
        F: FnOnce(CancellationToken, StatusSink) -> Fut,
        Fut: Future<Output = Answer> + Send + 'static,
    {
        let stop = CancellationToken::new();
        let sink = StatusSink::default();
        let mut work = tokio::spawn(answer(stop.clone(), sink.clone()));
        // Until a task holds it, the work stops when this call is dropped or cancelled.
        let stop_with_the_request = stop.drop_guard();
        tokio::select! {
            joined = &mut work => return settle(joined),
            () = request.cancelled() => {
                drop(stop_with_the_request);
                return settle(work.await);
            }
            () = tokio::time::sleep(DIRECT_WITHIN) => {}
        }
        let full = self
            .lock()
            .entry(client.clone())
            .or_default()
            .manager
            .running_task_count()
            >= MAX_WORKING;
        if full {
            // Others became tasks meanwhile: this one is answered when it ends.
            let joined = tokio::select! {
                joined = &mut work => joined,
                () = request.cancelled() => {
                    drop(stop_with_the_request);
                    work.await
                }
            };
            return settle(joined);
        }
        let stop = stop_with_the_request.disarm();
        let options = TaskOptions::new()
            .with_ttl_ms(millis(TASK_TTL))
            .with_poll_interval_ms(millis(POLL_INTERVAL))
            .with_status_message(format!("{tool}: working"));
        let mut clients = self.lock();
        let owned = clients.entry(client.clone()).or_default();
        let task = owned.manager.spawn(options, move |task| {
            sink.bind(task.clone());
            Box::pin(follow(task, stop, work))
        });
        owned.ids.push(task.task_id.clone());
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
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

/// The body of a task: follows the call's `work` until it ends or `tasks/cancel` stops it. A
/// cancelled task settles only once the call has returned (its session is free again); a task
/// aborted at its time to live cancels the call's engine token as it goes.
async fn follow(
    task: TaskContext,
    stop: CancellationToken,
    mut work: JoinHandle<Answer>,
) -> Result<CallToolResult, TaskExit> {
    let _stop_when_dropped = stop.clone().drop_guard();
    let joined = tokio::select! {
        joined = &mut work => joined,
        () = task.cancelled() => {
            stop.cancel();
            let _ = work.await;
            return Err(TaskExit::Cancelled);
        }
    };
    match settle(joined)? {
        CallToolResponse::Complete(result) => Ok(result),
        _ => Err(TaskExit::Error(ErrorData::internal_error(
            "the tool answered a task with something other than a result",
            None,
        ))),
    }
}

/// The answer of a call's work task; one that panicked is an internal error.
fn settle(joined: Result<Answer, JoinError>) -> Answer {
    joined.unwrap_or_else(|join| {
        tracing::error!(panic = join.is_panic(), "a tool call's task failed");
        Err(ErrorData::internal_error(
            "the tool call failed unexpectedly",
            None,
        ))
    })
}

/// Where a call's engine progress goes once it is a task: the task's status message, as
/// `tasks/get` shows it. Before the call becomes a task, the last report waits here.
#[derive(Clone, Default)]
pub struct StatusSink(Arc<Mutex<Sink>>);

#[derive(Default)]
struct Sink {
    task: Option<TaskContext>,
    waiting: Option<String>,
}

impl StatusSink {
    /// Shows a progress report: `analysing dumps: 3 of 10`.
    pub fn report(&self, progress: u64, total: Option<u64>, message: &str) {
        let text = match total {
            Some(total) => format!("{message}: {progress} of {total}"),
            None => format!("{message}: {progress}"),
        };
        let mut sink = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match &sink.task {
            Some(task) => task.set_status_message(text),
            None => sink.waiting = Some(text),
        }
    }

    /// From now on reports go to `task` (with the last one so far).
    fn bind(&self, task: TaskContext) {
        let mut sink = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(text) = sink.waiting.take() {
            task.set_status_message(text);
        }
        sink.task = Some(task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock, TaskStatus};

    fn done(text: &str) -> Answer {
        Ok(CallToolResult::success(vec![ContentBlock::text(text.to_string())]).into())
    }

    /// A call whose work takes `work` (or until it is stopped), then answers "done".
    async fn call_for(tasks: &Tasks, client: &ClientId, work: Duration) -> Answer {
        tasks
            .call(
                client,
                "run_command",
                CancellationToken::new(),
                move |stop, sink| async move {
                    sink.report(1, Some(2), "searching memory");
                    tokio::select! {
                        () = tokio::time::sleep(work) => done("done"),
                        () = stop.cancelled() => done("stopped"),
                    }
                },
            )
            .await
    }

    fn task_id(answer: Answer) -> String {
        match answer {
            Ok(CallToolResponse::Task(created)) => created.task.task_id,
            other => panic!("expected a task, got {other:?}"),
        }
    }

    async fn settled(tasks: &Tasks, client: &ClientId, id: &str) -> DetailedTask {
        loop {
            let task = tasks.get(client, id).expect("known");
            if task.status().is_terminal() {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_quick_call_is_answered_directly_and_a_long_one_becomes_a_task() {
        let tasks = Tasks::default();
        let client = ClientId::Stdio;
        let quick = call_for(&tasks, &client, DIRECT_WITHIN / 2).await;
        assert!(
            matches!(quick, Ok(CallToolResponse::Complete(_))),
            "{quick:?}"
        );
        let id = task_id(call_for(&tasks, &client, DIRECT_WITHIN * 3).await);
        let working = tasks.get(&client, &id).expect("known");
        assert_eq!(working.status(), TaskStatus::Working);
        assert_eq!(
            working.task.status_message.as_deref(),
            Some("searching memory: 1 of 2"),
            "the progress reported before it became a task"
        );
        let finished = settled(&tasks, &client, &id).await;
        assert_eq!(finished.status(), TaskStatus::Completed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_task_stops_its_work_and_another_client_cannot_see_it() {
        let tasks = Tasks::default();
        let (owner, other) = (ClientId::Stdio, ClientId::TokenHolder);
        let id = task_id(call_for(&tasks, &owner, Duration::from_secs(3600)).await);
        let foreign = tasks.get(&other, &id).expect_err("other does not know it");
        let never = tasks.get(&other, "never-issued").expect_err("unknown");
        assert_eq!(foreign.code, never.code);
        assert_eq!(
            foreign.message.replace(&id, "ID"),
            never.message.replace("never-issued", "ID")
        );
        assert!(tasks.cancel(&other, &id).is_err() && tasks.update(&other, &id).is_err());
        tasks.cancel(&owner, &id).expect("the owner may cancel");
        assert_eq!(
            settled(&tasks, &owner, &id).await.status(),
            TaskStatus::Cancelled
        );
    }

    #[tokio::test(start_paused = true)]
    async fn working_tasks_are_bounded_and_kept_ones_fall_back_to_direct_answers() {
        let tasks = Tasks::default();
        let client = ClientId::Stdio;
        let ids: Vec<String> = working_ids(&tasks, &client, MAX_WORKING).await;
        match tasks.admit(&client) {
            Admit::Refused(result) => {
                let error = result.structured_content.expect("a typed error");
                assert_eq!(error["code"], "too_many_tasks");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        for id in &ids {
            tasks.cancel(&client, id).expect("cancel");
            settled(&tasks, &client, id).await;
        }
        assert!(matches!(tasks.admit(&client), Admit::Task));
        while tasks.lock()[&client].ids.len() < MAX_KEPT {
            task_id(call_for(&tasks, &client, DIRECT_WITHIN * 2).await);
        }
        assert!(matches!(tasks.admit(&client), Admit::Direct));
        tasks.sweep();
        assert_eq!(
            tasks.lock()[&client].ids.len(),
            MAX_KEPT,
            "none has expired"
        );
    }

    /// Starts `n` tasks that work until cancelled.
    async fn working_ids(tasks: &Tasks, client: &ClientId, n: usize) -> Vec<String> {
        let mut ids = Vec::new();
        for _ in 0..n {
            ids.push(task_id(
                call_for(tasks, client, Duration::from_secs(3600)).await,
            ));
        }
        ids
    }
}
