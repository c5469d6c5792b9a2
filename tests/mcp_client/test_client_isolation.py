"""Sessions belong to the client that opened them (issue 35, item 4): over HTTP another client
can neither list, use, read nor close them, and its attempts are answered exactly as for an id
that was never issued. Ids are unguessable. A client is its MCP session, or the bearer token's
holder when the server requires one; a stateless client without a token has no identity, so
its session ids are capabilities: usable by whoever holds them, listed to nobody."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from mcp import Client

from conftest import SAMPLE, HttpServer, http_client, mcp_args, start_http
from helpers import call, err, ok, open_dump

pytestmark = pytest.mark.anyio

NEVER_ISSUED = "s-" + "0" * 24
TOKEN = "tok-isolation-5d1a"


@pytest.fixture
def own_copy(scratch: Path, request: pytest.FixtureRequest) -> Path:
    """A copy of the sample only this test opens (the HTTP server is shared)."""
    folder = scratch / f"isolation-{request.node.name}"
    folder.mkdir(exist_ok=True)
    return shutil.copyfile(SAMPLE, folder / SAMPLE.name)


async def unknown_alike(client: Client, tool: str, foreign: str, **arguments) -> None:
    """`tool` on `foreign` answers as on an id never issued: same code, message, hint."""
    theirs = err(await call(client, tool, session_id=foreign, **arguments))
    never = err(await call(client, tool, session_id=NEVER_ISSUED, **arguments))
    assert theirs["code"] == never["code"] == "unknown_session", (tool, theirs)
    assert theirs["message"].replace(foreign, NEVER_ISSUED) == never["message"], (tool, theirs)
    assert theirs["hint"] == never["hint"], (tool, theirs)


async def test_another_mcp_session_cannot_see_or_touch_a_session(http_server: HttpServer, own_copy: Path) -> None:
    async with Client(http_server.url, mode="legacy") as a, Client(http_server.url, mode="legacy") as b:
        sid = await open_dump(a, own_copy)
        assert re.fullmatch(r"s-[0-9a-f]{24}", sid), sid
        run = ok(await call(a, "run_command", session_id=sid, command="r"))
        command_id = run["results"][0]["command_id"]
        assert re.fullmatch(r"c-[0-9a-f]{16}", command_id), command_id

        assert sid not in {s["session_id"] for s in ok(await call(b, "list_sessions"))["sessions"]}
        await unknown_alike(b, "run_command", sid, command="r")
        await unknown_alike(b, "analyze_crash", sid)
        await unknown_alike(b, "close_session", sid)
        e = err(await call(b, "read_output", command_id=command_id))
        assert e["code"] == "unknown_output", e
        reopened = ok(await call(b, "open_dump", path=str(own_copy)))
        assert reopened["reused"] is False and reopened["session_id"] != sid, "b got a's session"
        ok(await call(b, "close_session", session_id=reopened["session_id"]))

        # Nothing b did touched a's session.
        assert ok(await call(a, "read_output", command_id=command_id))["text"]
        assert [s["session_id"] for s in ok(await call(a, "list_sessions"))["sessions"]].count(sid) == 1
        ok(await call(a, "close_session", session_id=sid))


async def test_a_closed_session_of_another_client_is_unknown_not_already_closed(
    http_server: HttpServer, own_copy: Path
) -> None:
    async with Client(http_server.url, mode="legacy") as a, Client(http_server.url, mode="legacy") as b:
        sid = await open_dump(a, own_copy)
        ok(await call(a, "close_session", session_id=sid))
        assert ok(await call(a, "close_session", session_id=sid))["already_closed"] is True
        await unknown_alike(b, "close_session", sid)


async def test_stateless_clients_without_a_token_hold_their_ids_as_capabilities(
    http_server: HttpServer, own_copy: Path
) -> None:
    async with Client(http_server.url, mode="2026-07-28") as a, Client(http_server.url, mode="2026-07-28") as b:
        sid = await open_dump(a, own_copy)
        for client in (a, b):
            listing = ok(await call(client, "list_sessions"))
            assert listing["sessions"] == [], "nothing tells a from b: no one is shown the ids"
        assert ok(await call(b, "open_dump", path=str(own_copy)))["reused"] is False
        # Knowing the id is the credential.
        ok(await call(a, "run_command", session_id=sid, command="r"))
        ok(await call(a, "close_session", session_id=sid))
    async with Client(http_server.url, mode="legacy") as c:
        await unknown_alike(c, "run_command", sid, command="r")


async def test_token_holders_are_one_client_across_connections(scratch: Path, own_copy: Path) -> None:
    server = start_http([*mcp_args(scratch), "--http", "127.0.0.1:0", "--token-env", "NTDBG_TEST_TOKEN"],
                        env={"NTDBG_TEST_TOKEN": TOKEN})
    try:
        async with http_client(server.url, TOKEN, mode="legacy") as a:
            sid = await open_dump(a, own_copy)
        async with http_client(server.url, TOKEN, mode="2026-07-28") as b:
            assert sid in {s["session_id"] for s in ok(await call(b, "list_sessions"))["sessions"]}
            assert ok(await call(b, "open_dump", path=str(own_copy)))["session_id"] == sid
            ok(await call(b, "close_session", session_id=sid))
    finally:
        server.stop()
