"""Tool sets (`ntdbg mcp --tools dumps|live|all`): a dump-only server lists only what works on
dumps, and a tool it leaves out is not answered either ("tool not found", as for any
unknown name); over stdio and streamable HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from conftest import SAMPLE, Target, mcp_args, start_http
from helpers import ok

pytestmark = pytest.mark.anyio

LIVE_TOOLS = {"attach", "break_in", "wait_for_event"}
DUMP_TOOLS = {"list_dumps", "triage_dumps", "open_dump"}


@pytest.fixture(params=[(t, s) for t in ("stdio", "http") for s in ("dumps", "live", "all")], ids=lambda p: f"{p[0]}-{p[1]}")
def tool_set(request: pytest.FixtureRequest, scratch: Path) -> Iterator[tuple[Target, str]]:
    transport, chosen = request.param
    args = [*mcp_args(scratch), "--tools", chosen]
    if transport == "stdio":
        yield Target("stdio", "legacy", scratch, None, args), chosen
        return
    server = start_http([*args, "--http", "127.0.0.1:0"])
    yield Target("http", "legacy", scratch, server, args), chosen
    server.stop()


async def test_a_set_lists_and_answers_only_its_tools(tool_set: tuple[Target, str]) -> None:
    target, chosen = tool_set
    async with target.connect() as client:
        names = {t.name for t in (await client.list_tools()).tools}
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert {"run_command", "analyze_crash", "read_output", "close_session", "list_sessions"} <= names
        if chosen == "dumps":
            assert not names & LIVE_TOOLS and DUMP_TOOLS <= names, names
            assert prompts == {"triage-dump", "triage-kernel-dump"}
            with pytest.raises(MCPError, match="tool not found"):
                await client.call_tool("attach", {"target": "gdb:127.0.0.1:1"})
            opened = ok(await client.call_tool("open_dump", {"path": str(SAMPLE)}))
            ok(await client.call_tool("close_session", {"session_id": opened["session_id"]}))
        elif chosen == "live":
            assert LIVE_TOOLS <= names and not names & DUMP_TOOLS, names
            assert prompts == set()
            with pytest.raises(MCPError, match="tool not found"):
                await client.call_tool("open_dump", {"path": str(SAMPLE)})
        else:
            assert LIVE_TOOLS | DUMP_TOOLS <= names
