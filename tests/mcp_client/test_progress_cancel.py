"""Progress notifications and cancellation, over stdio and HTTP, with both protocol modes.

A call whose request carries a progress token (the SDK adds one for a `progress_callback`)
receives `notifications/progress` with growing `progress`; a cancelled call (the SDK sends
`notifications/cancelled`, or at 2026-07-28 over HTTP closes the request's stream) stops at
the engine's next check, so the next call on the same session answers at once and correctly.

The long calls work on the shared corpus (found as ntdbg_testutil::testdata() finds it):
`triage_dumps` over all of it (about 1 s in a debug build), and a batch of memory searches
over the largest dump (about 1 s per search in a debug build).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest

from conftest import MODES, HttpServer, Target, mcp_args, start_http, transports
from helpers import call, ok, ran
from test_profiles import shared_testdata

pytestmark = pytest.mark.anyio

SHARED = shared_testdata()
BIG_DUMP = SHARED / "mozilla-minidump-stackwalk-pgo" / "pgo_data" / "minidumps" / "windows-aarch64.dmp"
SEARCH = 's -a 0 L?7fffffffffffffff "no such text anywhere"'
# How long the next call on a session waits for it after a cancel (its timeout_ms) before it
# answers session_busy: the cancelled search must have stopped by then (it checks every MiB,
# about 0.1 s in a debug build; one whole search takes 0.6 to 1.3 s there).
PROMPT_MS = 500


def server_args(scratch) -> list[str]:
    return [*mcp_args(scratch), "--allow-dir", str(SHARED)]


@pytest.fixture(scope="module")
def corpus_http(scratch) -> Iterator[HttpServer]:
    server = start_http([*server_args(scratch), "--http", "127.0.0.1:0"])
    yield server
    server.stop()


@pytest.fixture(params=[(t, m) for t in transports() for m in MODES], ids=lambda p: f"{p[0]}-{p[1]}")
def corpus(request: pytest.FixtureRequest, scratch) -> Target:
    """A server that may read the shared corpus."""
    transport, mode = request.param
    if transport == "http":
        return Target(transport, mode, scratch, request.getfixturevalue("corpus_http"))
    return Target(transport, mode, scratch, args=server_args(scratch))


class Progress:
    """Records progress notifications; `started` is set at the first one."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []
        self.started = anyio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))
        self.started.set()

    def check_growing(self) -> None:
        assert self.seen, "no progress notification"
        values = [p for p, _, _ in self.seen]
        assert values == sorted(set(values)), f"progress must grow: {values}"
        for progress, total, message in self.seen:
            assert total is None or progress <= total, self.seen
            assert message, self.seen


async def test_triage_reports_progress(corpus: Target) -> None:
    async with corpus.connect() as client:
        progress = Progress()
        result = await client.call_tool(
            "triage_dumps", {"directory": str(SHARED), "recursive": True, "format": "json"}, progress_callback=progress
        )
        dumps = ok(result)["dumps"]
        progress.check_growing()
        assert all(total == dumps for _, total, _ in progress.seen), (dumps, progress.seen)
        assert progress.seen[-1][2] == "analysing dumps"


async def test_a_search_batch_reports_progress(corpus: Target) -> None:
    async with corpus.connect() as client:
        sid = ok(await call(client, "open_dump", path=str(BIG_DUMP)))["session_id"]
        progress = Progress()
        result = await client.call_tool(
            "run_command",
            {"session_id": sid, "command": f"{SEARCH}; {SEARCH}", "format": "json"},
            progress_callback=progress,
        )
        assert [r["status"] for r in ok(result)["results"]] == ["succeeded", "succeeded"]
        progress.check_growing()
        assert len(progress.seen) >= 2, progress.seen


async def cancel_after_first_progress(client, tool: str, arguments: dict) -> Progress:
    """Starts a call, cancels it at its first progress notification; fails if none comes."""
    progress = Progress()
    scope = anyio.CancelScope()

    async def long_call() -> None:
        with scope:
            await client.call_tool(tool, arguments, progress_callback=progress)
            pytest.fail(f"{tool} ended before it was cancelled")

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(long_call)
        with anyio.fail_after(30):
            await progress.started.wait()
        scope.cancel()
    return progress


async def test_a_cancelled_batch_stops_and_the_session_answers(corpus: Target) -> None:
    async with corpus.connect() as client:
        sid = ok(await call(client, "open_dump", path=str(BIG_DUMP)))["session_id"]
        stack = ok(await call(client, "run_command", session_id=sid, command="k"))["results"][0]["output"]
        # Eight searches: about 8 s of work, cancelled during the first.
        await cancel_after_first_progress(
            client, "run_command", {"session_id": sid, "command": "; ".join([SEARCH] * 8)}
        )
        # A session still held by the cancelled search answers session_busy once this call's
        # timeout_ms is over: the answer itself says whether the session was free in time.
        after = ok(await call(client, "run_command", session_id=sid, command="k", timeout_ms=PROMPT_MS))
        assert after["results"][0]["output"] == stack


async def test_a_cancelled_triage_stops_and_the_server_answers(corpus: Target) -> None:
    async with corpus.connect() as client:
        await cancel_after_first_progress(client, "triage_dumps", {"directory": str(SHARED), "recursive": True})
        sessions = ok(await call(client, "list_sessions"))
        assert isinstance(sessions["sessions"], list)
        again = ok(await call(client, "triage_dumps", directory=str(SHARED), recursive=True))
        assert again["dumps"] > 0 and not any(f["error"] == "cancelled" for f in again["failed"])


async def test_a_batch_past_its_time_limit_is_cancelled_too(corpus: Target) -> None:
    async with corpus.connect() as client:
        sid = ok(await call(client, "open_dump", path=str(BIG_DUMP)))["session_id"]
        run = ran(await call(client, "run_command", session_id=sid, command="; ".join([SEARCH] * 8), timeout_ms=50))
        assert [r["status"] for r in run["results"]][:2] == ["timed_out", "not_executed"], run["results"]
        # As above: session_busy if the timed-out search still held the session.
        ok(await call(client, "run_command", session_id=sid, command="k", timeout_ms=PROMPT_MS))
