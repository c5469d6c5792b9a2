"""Fixtures for driving the real `ntdbg` binary with the official MCP Python SDK.

The binary comes from $NTDBG_BIN, else target/release/ntdbg, else target/debug/ntdbg; it is
started through the command prefix in $NTDBG_BIN_PREFIX when set (`wine` runs a Windows build:
NTDBG_BIN=…/ntdbg.exe NTDBG_BIN_PREFIX=wine). $NTDBG_MCP_TRANSPORTS (comma-separated, default
`stdio,http`) limits the transports the `target` fixture runs over. Every server is allowed two directories: the repository's testdata/ (the shipped sample dumps) and a
scratch folder holding damaged files for the error cases. HTTP servers listen on 127.0.0.1 with
port 0 and report the real address on stderr; they are stopped at the end of the session.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.extension import ClientExtension
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]
TESTDATA = REPO / "testdata"
SAMPLE = TESTDATA / "crashy-x64-null.dmp"
MODES = ["legacy", "2026-07-28"]  # the initialize handshake (2025-11-25) and the discover lifecycle


def ntdbg_bin() -> Path:
    if env := os.environ.get("NTDBG_BIN"):
        return Path(env)
    for profile in ("release", "debug"):
        candidate = REPO / "target" / profile / "ntdbg"
        if candidate.exists():
            return candidate
    raise RuntimeError("no ntdbg binary: build it (cargo build -p ntdbg-cli) or set NTDBG_BIN")


def ntdbg_command() -> list[str]:
    """The command that starts ntdbg: $NTDBG_BIN_PREFIX's words, then the binary."""
    return [*shlex.split(os.environ.get("NTDBG_BIN_PREFIX", "")), str(ntdbg_bin())]


def under_wine() -> bool:
    """Whether ntdbg runs as a Windows program under Wine ($NTDBG_BIN_PREFIX starts with wine)."""
    prefix = shlex.split(os.environ.get("NTDBG_BIN_PREFIX", ""))
    return bool(prefix) and Path(prefix[0]).name.startswith("wine")


def stdio_params(args: list[str], cwd: Path) -> StdioServerParameters:
    """How the SDK's stdio client starts `ntdbg ARGS` in `cwd`."""
    command, *prefix_args = ntdbg_command()
    return StdioServerParameters(command=command, args=[*prefix_args, *args], cwd=str(cwd))


def transports() -> list[str]:
    """The transports to test: $NTDBG_MCP_TRANSPORTS, else stdio and HTTP."""
    chosen = [t.strip() for t in os.environ.get("NTDBG_MCP_TRANSPORTS", "stdio,http").split(",") if t.strip()]
    unknown = set(chosen) - {"stdio", "http"}
    if unknown or not chosen:
        raise RuntimeError(f"NTDBG_MCP_TRANSPORTS: expected stdio and/or http, got {chosen}")
    return chosen


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An allowed folder with a text file named .dmp and a dump cut short."""
    folder = tmp_path_factory.mktemp("allowed")
    (folder / "notes.dmp").write_text("hello, this is no dump\n")
    whole = SAMPLE.read_bytes()
    (folder / "cut.dmp").write_bytes(whole[: len(whole) // 3])
    return folder


def mcp_args(scratch: Path) -> list[str]:
    return ["mcp", "--offline", "--allow-dir", str(TESTDATA), "--allow-dir", str(scratch)]


@dataclass
class HttpServer:
    """A running `ntdbg mcp --http` process."""

    process: subprocess.Popen
    url: str
    stderr: list[str] = field(default_factory=list)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_http(
    args: list[str], env: dict[str, str] | None = None, preexec: Callable[[], None] | None = None
) -> HttpServer:
    """Starts `ntdbg ARGS` (which include `--http`); `preexec` runs in the child before it
    starts (e.g. to lower its resource limits)."""
    process = subprocess.Popen(
        [*ntdbg_command(), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        preexec_fn=preexec,
    )
    lines: list[str] = []
    url = None
    assert process.stderr is not None
    for line in process.stderr:
        lines.append(line)
        if m := re.search(r"listening on (http://\S+/mcp)", line):
            url = m.group(1)
            break
    if url is None:
        process.kill()
        raise RuntimeError(f"the HTTP server did not start: {''.join(lines)}")
    server = HttpServer(process, url, lines)

    def drain() -> None:  # keep reading stderr so the server never blocks on a full pipe
        for line in process.stderr:  # type: ignore[union-attr]
            server.stderr.append(line)

    threading.Thread(target=drain, daemon=True).start()
    return server


@pytest.fixture(scope="session")
def http_server(scratch: Path) -> Iterator[HttpServer]:
    server = start_http([*mcp_args(scratch), "--http", "127.0.0.1:0"])
    yield server
    server.stop()
    assert server.process.returncode is not None


@dataclass
class Target:
    """How a test reaches the server: transport and protocol mode, and the server's arguments
    for stdio (one process per connection; `mcp_args` unless given)."""

    transport: str
    mode: str
    scratch: Path
    http: HttpServer | None = None
    args: list[str] | None = None

    @property
    def anonymous(self) -> bool:
        """Whether the client has no identity: stateless HTTP (2026-07-28) on a server without a
        token. Its sessions are reachable by their ids alone, never listed nor reused."""
        return self.transport == "http" and self.mode != "legacy"

    @asynccontextmanager
    async def connect(self, extensions: Sequence[ClientExtension] = ()) -> AsyncIterator[Client]:
        """A client of the server, with these SDK client extensions (e.g. tasks_ext's)."""
        chosen = list(extensions) or None
        if self.transport == "stdio":
            args = self.args if self.args is not None else mcp_args(self.scratch)
            async with Client(stdio_params(args, REPO), mode=self.mode, extensions=chosen) as client:
                yield client
        else:
            assert self.http is not None
            async with Client(self.http.url, mode=self.mode, extensions=chosen) as client:
                yield client


@asynccontextmanager
async def http_client(url: str, token: str | None = None, mode: str = "legacy") -> AsyncIterator[Client]:
    """An SDK client of the HTTP server at `url`, sending `Authorization: Bearer TOKEN` when a
    token is given."""
    if token is None:
        async with Client(url, mode=mode) as client:
            yield client
        return
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300))
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client


@pytest.fixture(params=[(t, m) for t in transports() for m in MODES], ids=lambda p: f"{p[0]}-{p[1]}")
def target(request: pytest.FixtureRequest, scratch: Path) -> Target:
    transport, mode = request.param
    http = request.getfixturevalue("http_server") if transport == "http" else None
    return Target(transport, mode, scratch, http)

