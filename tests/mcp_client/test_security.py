"""Transport-level behaviour outside the SDK's happy path: malformed stdio lines, logs kept off
stdout, Origin checks, the bearer token, refusing unsafe binds, oversized bodies, and files
outside --allow-dir (`..`, links, absolute and UNC-style paths) for reading and writing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from conftest import SAMPLE, HttpServer, mcp_args, ntdbg_command, start_http, stdio_params, under_wine
from helpers import call, err, ok, open_dump

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
        [*ntdbg_command(), *mcp_args(scratch)],
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
    assert [e["error"]["code"] for e in parse_errors] == [-32700]
    assert by_id[2]["error"]["code"] == -32700, "a message cut short is answered with the id it began with"
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
        [*ntdbg_command(), *mcp_args(scratch), *extra], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""


def test_oversized_bodies_are_refused(http_server: HttpServer) -> None:
    # 16 MiB is the limit (the same as a stdio line); a body over it is cut off with 413.
    big = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * (17 << 20) + b'"}}'
    response = httpx2.post(
        http_server.url,
        content=big,
        headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json"},
        timeout=60,
    )
    assert response.status_code == 413, response.text
    assert post_initialize(http_server.url).status_code == 200, "the server survives it"


@pytest.fixture(scope="module")
def fence(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An allowed folder whose links, and whose `..`, lead to a folder outside it."""
    root = tmp_path_factory.mktemp("fence")
    allowed, outside = root / "allowed", root / "outside"
    allowed.mkdir()
    outside.mkdir()
    secret = shutil.copyfile(SAMPLE, outside / "secret.dmp")
    (outside / "victim.txt").write_text("untouched\n")
    shutil.copyfile(SAMPLE, allowed / "inside.dmp")
    (allowed / "link.dmp").symlink_to(secret)
    (allowed / "outdir").symlink_to(outside)
    (allowed / "victim-link.txt").symlink_to(outside / "victim.txt")
    (allowed / "dangling.txt").symlink_to(outside / "created.txt")
    return root


def escapes(root: Path, name: str) -> list[str]:
    """Ways to name `outside/NAME` from a server allowed only `allowed/`."""
    outside = root / "outside" / name
    return [
        str(outside),
        str(root / "allowed" / ".." / "outside" / name),
        f"../outside/{name}",
        str(root / "allowed" / "outdir" / name),
        "/" + str(outside),  # `//tmp/...`: the same file on Linux, a UNC path on Windows
        "\\" + str(outside),
        f"\\\\server\\share\\{name}",
        f"//server/share/{name}",
        f"\\\\?\\UNC\\server\\share\\{name}",
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_no_file_outside_the_allowed_dirs_is_read_or_written(fence: Path, transport: str) -> None:
    allowed, outside = fence / "allowed", fence / "outside"
    args = ["mcp", "--offline", "--allow-dir", str(allowed)]
    before_outside = sorted(p.name for p in outside.iterdir())
    before_allowed = sorted(p.name for p in allowed.iterdir())
    server = start_http([*args, "--http", "127.0.0.1:0"]) if transport == "http" else None
    source = server.url if server else stdio_params(args, allowed)
    try:
        async with Client(source) as client:
            for path in [*escapes(fence, "secret.dmp"), str(allowed / "link.dmp")]:
                e = err(await call(client, "open_dump", path=path))
                assert e["code"] == "path_not_allowed", (path, e)
            for directory in [str(outside), "../outside", str(allowed / "outdir"), "//server/share"]:
                e = err(await call(client, "list_dumps", directory=directory))
                assert e["code"] == "path_not_allowed", (directory, e)
            sid = await open_dump(client, allowed / "inside.dmp")
            targets = [
                *escapes(fence, "written.txt"),
                str(allowed / "victim-link.txt"),
                str(allowed / "dangling.txt"),
            ]
            for path in targets:
                result = await call(client, "run_command", session_id=sid, command="r", output_file=path)
                if under_wine() and path.endswith("dangling.txt"):
                    # Wine shows a dangling Unix link to Windows programs as nothing at all, so
                    # the check cannot see it; creating the file there fails and nothing is written.
                    assert ok(result)["output_file"]["written"] is False, (path, result)
                    continue
                e = err(result)
                assert e["code"] == "path_not_allowed", (path, e)
            ok(await call(client, "close_session", session_id=sid))
    finally:
        if server:
            server.stop()
    assert sorted(p.name for p in outside.iterdir()) == before_outside
    assert (outside / "victim.txt").read_text() == "untouched\n"
    assert sorted(p.name for p in allowed.iterdir()) == before_allowed


@pytest.mark.anyio
async def test_outside_paths_answer_alike_whether_or_not_they_exist(fence: Path) -> None:
    """Issue 35, item 6: a path outside the sandbox answers `path_not_allowed` with the same
    message shape whether it exists, is missing, or cannot be resolved at all (a file used as
    a folder, a missing file behind a link out)."""
    allowed, outside = fence / "allowed", fence / "outside"
    args = ["mcp", "--offline", "--allow-dir", str(allowed)]
    probes = {
        "exists": outside / "secret.dmp",
        "missing": outside / "missing.dmp",
        "file as folder": outside / "secret.dmp" / "x.dmp",
        "missing folder": fence / "nowhere" / "x.dmp",
        "missing behind a link": allowed / "outdir" / "missing.dmp",
    }
    async with Client(stdio_params(args, allowed)) as client:
        for what, path in probes.items():
            e = err(await call(client, "open_dump", path=str(path)))
            assert e["code"] == "path_not_allowed", (what, e)
            assert e["message"] == f"{path} is outside the allowed directories", (what, e)
            e = err(await call(client, "list_dumps", directory=str(path)))
            assert e["code"] == "path_not_allowed", (what, e)


def closed_loopback_port() -> int:
    """A loopback port nothing listens on: bound, then released (the test's own)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def refusal(client: Client, target: str) -> dict:
    answer = await call(client, "attach", target=target, timeout_seconds=2)
    e = err(answer)
    assert e["code"] == "attach_refused", e
    return e


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.anyio
async def test_attach_is_scoped_and_refused_and_unreachable_targets_answer_alike(
    scratch: Path, transport: str
) -> None:
    """By default only this machine's stubs may be attached; a refused target and a closed
    port get the same answer, so a client cannot probe what listens where (issue 35)."""
    port = closed_loopback_port()
    args = [*mcp_args(scratch)]
    server = start_http([*args, "--http", "127.0.0.1:0"]) if transport == "http" else None
    try:
        client_cm = Client(server.url) if server else Client(stdio_params(args, scratch))
        async with client_cm as client:
            elsewhere = await refusal(client, "gdb:10.255.255.1:1234")
            closed = await refusal(client, f"gdb:127.0.0.1:{port}")
            assert elsewhere["message"].replace("gdb:10.255.255.1:1234", "T") == closed["message"].replace(
                f"gdb:127.0.0.1:{port}", "T"
            ), (elsewhere, closed)
            assert elsewhere.get("hint") == closed.get("hint")
    finally:
        if server:
            server.stop()


@pytest.mark.anyio
async def test_allow_attach_none_serves_no_live_target(scratch: Path) -> None:
    args = [*mcp_args(scratch), "--allow-attach", "none"]
    async with Client(stdio_params(args, scratch)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "attach" not in names and "open_dump" in names, names


@pytest.mark.anyio
async def test_allow_attach_patterns_replace_the_default(scratch: Path) -> None:
    port = closed_loopback_port()
    args = [*mcp_args(scratch), "--allow-attach", f"gdb:127.0.0.1:{port}"]
    async with Client(stdio_params(args, scratch)) as client:
        # Allowed, but nothing answers: the same refusal. Another loopback port is not allowed.
        await refusal(client, f"gdb:127.0.0.1:{port}")
        await refusal(client, f"gdb:127.0.0.1:{port + 1 if port < 65535 else port - 1}")


@pytest.mark.parametrize("pattern", ["ssh:host", "gdb:host", "none,local"])
def test_a_bad_allow_attach_pattern_stops_the_server(scratch: Path, pattern: str) -> None:
    extra = [a for p in pattern.split(",") for a in ("--allow-attach", p)]
    done = subprocess.run(
        [*ntdbg_command(), *mcp_args(scratch), *extra], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 2 and "--allow-attach" in done.stderr, done
