"""Transport-level behaviour outside the SDK's happy path: malformed stdio lines, logs kept off
stdout, Origin checks, the bearer token and refusing unsafe binds."""

from __future__ import annotations

import json
import subprocess

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from conftest import HttpServer, mcp_args, ntdbg_bin, start_http
from helpers import call, ok

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
TOKEN = "tok-7c2f9a41-canary"


def test_malformed_stdio_lines_are_answered_and_survived(scratch) -> None:
    lines = [
        "this is not json",
        json.dumps(INIT),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/li',
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    ]
    done = subprocess.run(
        [str(ntdbg_bin()), *mcp_args(scratch)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]  # stdout holds JSON only
    # Parse errors are answered at once, so they may overtake replies still being computed.
    by_id = {r["id"]: r for r in replies if r["id"] is not None}
    parse_errors = [r for r in replies if r["id"] is None]
    assert [e["error"]["code"] for e in parse_errors] == [-32700, -32700]
    assert by_id[1]["result"]["protocolVersion"] == "2025-11-25"
    assert len(by_id[3]["result"]["tools"]) == 11
    assert len(replies) == 4


def post_initialize(url: str, **headers: str) -> httpx2.Response:
    return httpx2.post(
        url,
        json=INIT,
        headers={"Accept": "application/json, text/event-stream", **headers},
        timeout=30,
    )


def test_origin_is_validated(http_server: HttpServer) -> None:
    assert post_initialize(http_server.url).status_code == 200
    assert post_initialize(http_server.url, Origin="http://localhost:6274").status_code == 200
    assert post_initialize(http_server.url, Origin="http://evil.example").status_code == 403
    assert post_initialize(http_server.url, Origin="http://evil.example", Host="evil.example").status_code == 403


@pytest.fixture(scope="module")
def token_server(scratch) -> HttpServer:
    server = start_http(
        [*mcp_args(scratch), "--http", "127.0.0.1:0", "--unsafe-http", "--token-env", "NTDBG_TEST_TOKEN"],
        env={"NTDBG_TEST_TOKEN": TOKEN, "NTDBG_LOG": "debug"},
    )
    yield server
    server.stop()
    logs = "".join(server.stderr)
    assert TOKEN not in logs, "the token leaked into the logs"
    assert server.process.stdout is not None
    assert TOKEN not in server.process.stdout.read()


def test_bearer_token_is_required(token_server: HttpServer) -> None:
    assert post_initialize(token_server.url).status_code == 401
    assert post_initialize(token_server.url, Authorization="Bearer wrong").status_code == 401
    response = post_initialize(token_server.url, Authorization=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert TOKEN not in response.text


@pytest.mark.anyio
async def test_sdk_client_with_token(token_server: HttpServer) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    async with http, Client(streamable_http_client(token_server.url, http_client=http), mode="legacy") as client:
        listing = ok(await call(client, "list_sessions"))
        assert listing["sessions"] == [] or isinstance(listing["sessions"], list)


@pytest.mark.parametrize(
    "extra",
    [
        ["--http", "0.0.0.0:0"],
        ["--http", "0.0.0.0:0", "--unsafe-http"],
        ["--http", "0.0.0.0:0", "--unsafe-http", "--token-env", "NTDBG_TEST_UNSET_VARIABLE"],
    ],
    ids=["non-loopback", "unsafe-without-token", "token-variable-unset"],
)
def test_unsafe_binds_are_refused(scratch, extra: list[str]) -> None:
    done = subprocess.run(
        [str(ntdbg_bin()), *mcp_args(scratch), *extra], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
