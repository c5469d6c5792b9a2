"""Clients that misbehave on purpose (issue 35, items 3 and 7): half-sent HTTP requests by the
thousand, heads and bodies that never finish, and every kind of malformed JSON-RPC message, over
stdio and HTTP. Each must get an answer (or a closed connection) and leave the server serving
everyone else."""

from __future__ import annotations

import http.client
import json
import resource
import socket
import subprocess
import time
from collections.abc import Iterator

import anyio
import pytest
from mcp import Client

from conftest import HttpServer, mcp_args, ntdbg_command, start_http, under_wine

pytestmark = pytest.mark.skipif(under_wine(), reason="descriptor limits and raw sockets are set up for a Linux server")

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
HALF_SENT = 1_100
# The server's default connection cap (HttpLimits::default in crates/ntdbg-mcp/src/listener.rs).
DEFAULT_MAX_CONNECTIONS = 256
# A common default descriptor limit; the server gets it, so that without a cap 1,100 half-sent
# requests would use up its descriptors as they did on the machine the issue was found on.
SERVER_DESCRIPTORS = 1_024
# A bound for waits on the server that should end almost at once; passing never depends on it.
PATIENCE = 60.0


def raise_own_descriptor_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard) if hard != resource.RLIM_INFINITY else needed, hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < needed:
        pytest.skip(f"!!! SKIP: this test opens {needed} sockets and the descriptor limit is lower")


def server_with_few_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (SERVER_DESCRIPTORS, SERVER_DESCRIPTORS))


def address(server: HttpServer) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").removesuffix("/mcp").rsplit(":", 1)
    return host, int(port)


def half_sent(host: str, port: int) -> socket.socket:
    s = socket.create_connection((host, port), timeout=PATIENCE)
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
    return s


def closed_by_server(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.fixture
def limited_server(scratch) -> Iterator[HttpServer]:
    """A server with the default limits and a common descriptor limit (1,024)."""
    server = start_http([*mcp_args(scratch), "--http", "127.0.0.1:0"], preexec=server_with_few_descriptors)
    yield server
    server.stop()


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_half_sent_requests_do_not_lock_out_other_clients(limited_server: HttpServer, mode: str) -> None:
    """Item 3: 1,100 connections that never finish their request head; another client is then
    served at once, and the server keeps no more than its cap of connections open."""
    raise_own_descriptor_limit(HALF_SENT + 200)
    host, port = address(limited_server)
    stalled = [half_sent(host, port) for _ in range(HALF_SENT)]
    try:
        with anyio.fail_after(PATIENCE):  # locked out: the client would wait for ever
            async with Client(limited_server.url, mode=mode) as client:
                assert len((await client.list_tools()).tools) == 11
        deadline = time.monotonic() + PATIENCE
        while sum(not closed_by_server(s) for s in stalled) > DEFAULT_MAX_CONNECTIONS:
            assert time.monotonic() < deadline, "the server holds more connections than its cap"
            time.sleep(0.05)
        assert closed_by_server(stalled[0]), "the oldest half-sent request made room first"
    finally:
        for s in stalled:
            s.close()


def test_a_head_not_sent_in_time_closes_the_connection(scratch) -> None:
    server = start_http([*mcp_args(scratch), "--http", "127.0.0.1:0", "--http-header-timeout", "1"])
    try:
        s = half_sent(*address(server))
        s.settimeout(PATIENCE)  # a server that never closes it fails the test here
        while s.recv(4096):
            pass
        s.close()
        assert json.loads(post(server, json.dumps(INIT).encode())[1])["result"]["protocolVersion"] == "2025-11-25"
    finally:
        server.stop()


def test_a_body_not_sent_in_time_is_answered_408(scratch) -> None:
    server = start_http([*mcp_args(scratch), "--http", "127.0.0.1:0", "--http-body-timeout", "1"])
    try:
        s = socket.create_connection(address(server), timeout=PATIENCE)
        s.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\""
        )
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
        s.close()
        assert reply.startswith(b"HTTP/1.1 408"), reply
    finally:
        server.stop()


# Issue 35, item 7: each got no reply at all (or a -32600 without an id) before.
MALFORMED: list[tuple[str, bytes, int, object]] = [
    ("invalid UTF-8", b'{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"x":"\xff\xfe"}}', -32700, 11),
    ("lone surrogate", b'{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{"x":"\\ud800"}}', -32700, 12),
    (
        "nested deeper than 128",
        b'{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"x":' + b"[" * 200 + b"]" * 200 + b"}}",
        -32700,
        13,
    ),
    ("id 1e400", b'{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}', -32700, None),
    ("id 1.5", b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', -32600, None),
    ("id null", b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', -32600, None),
    ("method not a string", b'{"jsonrpc":"2.0","id":14,"method":5}', -32600, 14),
    ("no jsonrpc member", b'{"id":15,"method":"tools/list"}', -32600, 15),
    ("params not an object", b'{"jsonrpc":"2.0","id":16,"method":"tools/list","params":[1]}', -32602, 16),
    ("tools/call without a name", b'{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":5}}', -32602, 19),
    ("a bare string", b'"x"', -32600, None),
    ("empty batch", b"[]", -32600, None),
]
BATCH = b'[{"jsonrpc":"2.0","id":17,"method":"tools/list"},1]'


def check_reply(reply: dict, what: str, code: int, id_: object) -> None:
    assert reply.get("jsonrpc") == "2.0", (what, reply)
    assert "id" in reply, (what, reply)
    assert (reply["error"]["code"], reply["id"]) == (code, id_), (what, reply)


def test_every_malformed_message_is_answered_over_stdio(scratch) -> None:
    lines = [json.dumps(INIT).encode(), b'{"jsonrpc":"2.0","method":"notifications/initialized"}']
    lines += [body for _, body, _, _ in MALFORMED] + [BATCH, b'{"jsonrpc":"2.0","id":99,"method":"tools/list"}']
    done = subprocess.run(
        [*ntdbg_command(), *mcp_args(scratch)], input=b"\n".join(lines) + b"\n", capture_output=True, timeout=PATIENCE
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    # The errors are written in order as lines are read; rmcp's answers may come between them.
    answered = {r["id"] for r in replies if isinstance(r, dict) and "result" in r}
    assert answered == {1, 99}, "the server kept serving"
    errors = [r for r in replies if not (isinstance(r, dict) and "result" in r)]
    assert len(errors) == len(MALFORMED) + 1
    for (what, _, code, id_), reply in zip(MALFORMED, errors):
        check_reply(reply, what, code, id_)
    batch = errors[-1]
    assert [(e["error"]["code"], e["id"]) for e in batch] == [(-32600, 17), (-32600, None)]


def post(server: HttpServer, body: bytes, **headers: str) -> tuple[int, bytes]:
    """POSTs raw bytes; the reply's JSON (from an SSE stream's data lines when there is one)."""
    connection = http.client.HTTPConnection(*address(server), timeout=PATIENCE)
    connection.request(
        "POST",
        "/mcp",
        body=body,
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
    )
    response = connection.getresponse()
    payload = response.read()
    connection.close()
    if response.getheader("Content-Type", "").startswith("text/event-stream"):
        payload = b"".join(line[6:] for line in payload.splitlines() if line.startswith(b"data: {"))
    return response.status, payload


@pytest.mark.parametrize("headers", [{}, {"MCP-Protocol-Version": "2026-07-28"}], ids=["legacy", "2026-07-28"])
def test_every_malformed_message_is_answered_over_http(http_server: HttpServer, headers: dict[str, str]) -> None:
    for what, body, code, id_ in MALFORMED:
        status, payload = post(http_server, body, **headers)
        assert status == 400, (what, status, payload)
        check_reply(json.loads(payload), what, code, id_)
    status, payload = post(http_server, BATCH, **headers)
    assert status == 400
    assert [(e["error"]["code"], e["id"]) for e in json.loads(payload)] == [(-32600, 17), (-32600, None)]
    status, payload = post(http_server, json.dumps(INIT).encode())
    assert status == 200 and json.loads(payload)["id"] == 1, "the server kept serving"
