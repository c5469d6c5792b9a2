"""Tasks (the `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28), over stdio and HTTP.

A client that declares the extension (tasks_ext.TasksExtension) gets a task handle for a call of
`triage_dumps`, `run_command` or `analyze_crash` at 2026-07-28 that does not end within 0.2 s
(the Rust unit tests in crates/ntdbg-mcp/src/tasks.rs cover quick calls answered directly and
the per-client bounds), follows it with `tasks/get`
(status, progress in `statusMessage`, the result) and stops it with `tasks/cancel`; a task of
one client is unknown to another. A client of the older revision, with the same extension
configured, still gets plain results and progress notifications.

The long calls are those of test_progress_cancel.py: memory searches over the corpus's largest
dump (about 1 s each in a debug build); the older client triages a folder of copies of a sample
dump.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError
from mcp.client.extension import advertise

from conftest import SAMPLE, HttpServer, Target, mcp_args, start_http, transports
from helpers import call, ok
from tasks_ext import TASKS, CreatedTask, TasksExtension, TaskState, cancel_task, follow, get_task, result_of
from test_progress_cancel import BIG_DUMP, SEARCH, SHARED, Progress

pytestmark = pytest.mark.anyio

COPIES = 12
# Four searches over the largest dump: seconds in a debug build, far past the time within which
# a call is answered directly (0.2 s), so the call becomes a task.
SEARCHES = "; ".join([SEARCH] * 4)
# How long after a cancelled task reports `cancelled` its session may still be held (issue 36:
# "the session is usable again within a second"): the next call's timeout_ms.
FREED_WITHIN_MS = 1000


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of COPIES links to (or copies of) the sample dump."""
    folder = tmp_path_factory.mktemp("copies")
    for n in range(COPIES):
        target = folder / f"copy{n:02}.dmp"
        try:
            os.link(SAMPLE, target)
        except OSError:
            target.write_bytes(SAMPLE.read_bytes())
    return folder


def server_args(scratch: Path, copies: Path) -> list[str]:
    return [*mcp_args(scratch), "--allow-dir", str(SHARED), "--allow-dir", str(copies)]


@pytest.fixture(scope="module")
def tasks_http(scratch: Path, copies: Path) -> Iterator[HttpServer]:
    server = start_http([*server_args(scratch, copies), "--http", "127.0.0.1:0"])
    yield server
    server.stop()


def make_target(request: pytest.FixtureRequest, transport: str, mode: str, scratch: Path, copies: Path) -> Target:
    if transport == "http":
        return Target(transport, mode, scratch, request.getfixturevalue("tasks_http"))
    return Target(transport, mode, scratch, args=server_args(scratch, copies))


@pytest.fixture(params=transports())
def modern(request: pytest.FixtureRequest, scratch: Path, copies: Path) -> Target:
    """A 2026-07-28 client (the revision that defines tasks) of a server that may read the
    corpus and the copies."""
    return make_target(request, request.param, "2026-07-28", scratch, copies)


@pytest.fixture(params=transports())
def legacy(request: pytest.FixtureRequest, scratch: Path, copies: Path) -> Target:
    """A 2025-11-25 client (the initialize handshake) of the same server."""
    return make_target(request, request.param, "legacy", scratch, copies)


async def start(client: Client, tool: str, **arguments) -> CreatedTask:
    created = await client.session.call_tool(tool, arguments, allow_claimed=True)
    assert isinstance(created, CreatedTask), f"expected a task handle, got {created}"
    assert created.status == "working" and created.ttl_ms and created.poll_interval_ms, created
    return created


async def until(client: Client, task: TaskState, done) -> TaskState:
    """Reads the task until `done(state)` holds or it ends."""
    with anyio.fail_after(60):
        while not done(task) and task.status == "working":
            await anyio.sleep(0.02)
            task = await get_task(client, task.task_id)
    return task


async def test_a_task_runs_to_completion_and_its_result_is_fetched(modern: Target) -> None:
    async with modern.connect([TasksExtension()]) as client:
        sid = ok(await call(client, "open_dump", path=str(BIG_DUMP)))["session_id"]
        created = await start(client, "run_command", session_id=sid, command=SEARCHES, format="json")
        done = await follow(client, created)
        assert done.status == "completed", done
        batch = ok(result_of(done))
        assert [r["status"] for r in batch["results"]] == ["succeeded"] * 4, batch
        again = await get_task(client, created.task_id)
        assert again.status == "completed" and again.result == done.result, "a result is kept"
        # Through the SDK's claim, a plain call_tool gets the result whether the call became a
        # task or (quick, as this one) was answered directly.
        stack = ok(await call(client, "run_command", session_id=sid, command="k"))
        assert stack["results"][0]["status"] == "succeeded", stack


async def test_a_task_s_progress_is_read_while_it_works(modern: Target) -> None:
    async with modern.connect([TasksExtension()]) as client:
        sid = ok(await call(client, "open_dump", path=str(BIG_DUMP)))["session_id"]
        created = await start(
            client, "run_command", session_id=sid, command="; ".join([SEARCH] * 3), format="json"
        )
        working = await until(client, created, lambda t: "searching" in (t.status_message or ""))
        assert working.status == "working", f"no progress while it worked: {working}"
        assert re.fullmatch(r"searching[^:]*: \d+( of \d+)?", working.status_message or ""), working
        done = await follow(client, working)
        assert done.status == "completed", done
        batch = ok(result_of(done))
        assert [r["status"] for r in batch["results"]] == ["succeeded"] * 3, batch


async def test_a_cancelled_task_stops_and_frees_its_session(modern: Target) -> None:
    async with modern.connect([TasksExtension()]) as client:
        sid = ok(await call(client, "open_dump", path=str(BIG_DUMP)))["session_id"]
        # Eight searches, about 8 s of work, cancelled once the first reports progress.
        created = await start(client, "run_command", session_id=sid, command="; ".join([SEARCH] * 8))
        working = await until(client, created, lambda t: "searching" in (t.status_message or ""))
        assert working.status == "working", working
        # The task holds the session: another command waits its timeout_ms, then is told so.
        busy = await call(client, "run_command", session_id=sid, command="k", timeout_ms=100)
        assert busy.is_error and busy.structured_content["code"] == "session_busy", busy
        await cancel_task(client, created.task_id)
        with anyio.fail_after(30):
            ended = await follow(client, working)
        assert ended.status == "cancelled", ended
        # A session still held by the cancelled task answers session_busy once this call's
        # timeout_ms is over: the answer says whether the session was free within it.
        after = ok(await call(client, "run_command", session_id=sid, command="k", timeout_ms=FREED_WITHIN_MS))
        assert after["results"][0]["status"] == "succeeded", after


async def test_a_task_of_one_client_is_unknown_to_another(tasks_http: HttpServer) -> None:
    """Over HTTP: a task of a stateless client (held by its id, as its sessions are) is unknown to
    a client of its own MCP session that declares the extension, exactly as an id never issued."""
    never_issued = "00000000-0000-4000-8000-000000000000"
    async with Client(tasks_http.url, mode="2026-07-28", extensions=[TasksExtension()]) as owner:
        sid = ok(await call(owner, "open_dump", path=str(BIG_DUMP)))["session_id"]
        created = await start(owner, "run_command", session_id=sid, command=SEARCHES)
        async with Client(tasks_http.url, mode="legacy", extensions=[advertise(TASKS)]) as other:
            answers = []
            for task_id in (created.task_id, never_issued):
                with pytest.raises(MCPError) as refused:
                    await get_task(other, task_id)
                answers.append((refused.value.code, refused.value.message.replace(task_id, "ID")))
            assert answers[0] == answers[1], answers
            with pytest.raises(MCPError):
                await cancel_task(other, created.task_id)
        await cancel_task(owner, created.task_id)
        assert (await follow(owner, created)).status == "cancelled"


async def test_older_clients_get_plain_results_and_progress(legacy: Target, copies: Path) -> None:
    """Even when a 2025-11-25 client declares the extension (an SDK client would fail on a task
    handle it never claimed), a long call is answered with its result."""
    async with legacy.connect([advertise(TASKS)]) as client:
        sid = ok(await call(client, "open_dump", path=str(BIG_DUMP)))["session_id"]
        batch = ok(await call(client, "run_command", session_id=sid, command=SEARCHES))
        assert [r["status"] for r in batch["results"]] == ["succeeded"] * 4, batch
        progress = Progress()
        result = await client.call_tool(
            "triage_dumps", {"directory": str(copies), "format": "json"}, progress_callback=progress
        )
        assert ok(result)["dumps"] == COPIES
        progress.check_growing()
