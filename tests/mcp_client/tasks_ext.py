"""The client half of MCP's Tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28) for
the tests, on the SDK's extension interface: `TasksExtension()` passed to `Client(extensions=…)`
declares the extension in every request's capabilities (at 2026-07-28; the SDK leaves it out
of older handshakes) and claims the `resultType: "task"` answer of `tools/call`. A plain
`call_tool` then polls the task to its end and returns its `CallToolResult`; with
`allow_claimed=True` it returns the `CreatedTask` for the caller to follow with `get_task` and
`cancel_task`. The SDK's own task types are 2025-11-25's (a nested `task`), so the 2026 shapes
are declared here."""

from __future__ import annotations

from typing import Any, Literal

import anyio
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import CallToolResult, Request, RequestParams, Result

TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = {"completed", "failed", "cancelled"}


class TaskParams(RequestParams):
    task_id: str


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


class TaskState(Result):
    """A task as `tasks/get` answers (a `DetailedTask`)."""

    result_type: str | None = None
    task_id: str
    status: Literal["working", "input_required", "completed", "failed", "cancelled"]
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class CreatedTask(TaskState):
    """A `tools/call` answered with a task handle."""

    result_type: Literal["task"]


class Ack(Result):
    result_type: str | None = None


class TaskEnded(RuntimeError):
    """A task that ended without a result (failed or cancelled)."""


async def get_task(client: Client, task_id: str) -> TaskState:
    return await client.session.send_request(GetTask(params=TaskParams(task_id=task_id)), TaskState)


async def cancel_task(client: Client, task_id: str) -> None:
    await client.session.send_request(CancelTask(params=TaskParams(task_id=task_id)), Ack)


async def _poll(session: ClientSession, task: TaskState) -> TaskState:
    """Reads the task every `pollIntervalMs` until it ends."""
    while task.status not in TERMINAL:
        await anyio.sleep((task.poll_interval_ms or 200) / 1000)
        task = await session.send_request(GetTask(params=TaskParams(task_id=task.task_id)), TaskState)
    return task


async def follow(client: Client, task: TaskState) -> TaskState:
    """Polls the task at its `pollIntervalMs` until it ends."""
    return await _poll(client.session, task)


def result_of(task: TaskState) -> CallToolResult:
    if task.status != "completed" or task.result is None:
        raise TaskEnded(f"task {task.task_id} ended {task.status}: {task.error}")
    return CallToolResult.model_validate(task.result)


async def _resolve(created: CreatedTask, ctx: ClaimContext) -> CallToolResult:
    return result_of(await _poll(ctx.session, created))


class TasksExtension(ClientExtension):
    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=_resolve)]
