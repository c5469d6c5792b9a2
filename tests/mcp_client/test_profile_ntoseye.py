"""The ntoseye profile (`ntdbg mcp --profile ntoseye`): ntoseye's `command`, `open` and
`close`, used the way ntoseye's users use them, over stdio and streamable HTTP.

ntoseye refuses a call with a JSON-RPC error whose data carries the failure's `kind` and a
`hint`; the SDK raises those as MCPError. The live test needs gdbserver, cc and nm (as
test_live.py) and is skipped without them.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from conftest import SAMPLE, HttpServer, Target, ntdbg_command, start_http
from helpers import text
from test_live import GdbServer, program  # noqa: F401  (the fixture that builds the live target)
from test_profiles import KERNEL_DUMP, check_tools, profile_args

pytestmark = pytest.mark.anyio

NTOSEYE_TOOLS = {
    "command": {"line": ("string", True), "timeout_ms": ("integer", False), "format": ("string", False)},
    "open": {"backend": ("string", True), "connect": ("string", False), "key": ("string", False)},
    "close": {},
}
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
# The trailer of the sample dump: the faulting thread, its instruction and the process.
SAMPLE_TRAILER = re.compile(r"\[target halted @ 0 0x140001517 crashy!write_null\+0x7 \| process crashy\.exe \(\d+\)\]")


@pytest.fixture(params=["stdio", "http"])
def ntoseye(request: pytest.FixtureRequest, scratch: Path) -> Iterator[Target]:
    """An ntoseye server without a target; HTTP servers are per test (the one session is the
    server's, shared by every connection)."""
    with serve(request.param, scratch, profile_args(scratch, "ntoseye")) as target:
        yield target


@contextmanager
def serve(transport: str, scratch: Path, args: list[str]) -> Iterator[Target]:
    """A Target reaching `ntdbg ARGS` over `transport`; an HTTP server is stopped on exit."""
    if transport == "stdio":
        yield Target("stdio", "legacy", scratch, None, args)
        return
    server: HttpServer = start_http([*args, "--http", "127.0.0.1:0"])
    try:
        yield Target("http", "legacy", scratch, server, args)
    finally:
        server.stop()


async def refused(client: Client, tool: str, **arguments) -> dict:
    """ntoseye's error shape: a JSON-RPC error with `kind` and `hint` in its data."""
    with pytest.raises(MCPError) as caught:
        await client.call_tool(tool, arguments)
    error = caught.value.error
    assert isinstance(error.data, dict) and {"kind", "hint"} <= set(error.data), error
    assert error.data["hint"], error
    return {"code": error.code, "message": error.message, **error.data}


async def command(client: Client, line: str, **arguments):
    return await client.call_tool("command", {"line": line, **arguments})


def trailer(result) -> str:
    return text(result).rstrip("\n").rsplit("\n", 1)[-1]


async def test_ntoseye_tools(ntoseye: Target) -> None:
    async with ntoseye.connect() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        check_tools(tools.values(), NTOSEYE_TOOLS)
        props = tools["command"].input_schema["properties"]
        assert props["timeout_ms"]["maximum"] == 300000
        assert props["format"]["enum"] == ["text", "json"]
        assert tools["open"].input_schema["properties"]["backend"]["enum"] == ["kd", "kdnet", "gdb", "memory", "dump"]
        schema = tools["command"].output_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        assert set(schema["required"]) == {"ok", "output", "result", "target", "debug_output"}


async def test_ntoseye_dump_flow(ntoseye: Target) -> None:
    """open dump -> !analyze -v -> k -> dt -> close, as ntoseye's users script it."""
    async with ntoseye.connect() as client:
        schema = {t.name: t.output_schema for t in (await client.list_tools()).tools}["command"]
        opened = await client.call_tool("open", {"backend": "dump", "connect": str(SAMPLE)})
        assert not opened.is_error
        assert opened.structured_content["status"] == "connected"
        assert opened.structured_content["backend"] == "dump"
        assert opened.structured_content["connect"] == str(SAMPLE)

        analyze = await command(client, "!analyze -v")
        assert not analyze.is_error, text(analyze)
        assert "AV_WRITE_NULL crashy!write_null" in text(analyze)
        assert SAMPLE_TRAILER.fullmatch(trailer(analyze)), trailer(analyze)

        k = await command(client, "k", format="json")
        assert not k.is_error
        value = k.structured_content
        jsonschema.validate(value, schema)
        assert value["ok"] is True and value["debug_output"] == []
        assert [f["function"] for f in value["result"]["frames"][:3]] == ["write_null(int)", "mode_null()", "main(int, char**)"]
        assert "crashy!write_null+0x7" in value["output"].splitlines()[1]
        target = value["target"]
        assert target["running"] is False and target["rip"] == "0x140001517"
        assert target["symbol"] == "crashy!write_null+0x7" and target["current_thread"] == "0"
        assert target["stopped_process"]["name"] == "crashy.exe" and target["kernel_base"] is None

        dt = await command(client, "dt crashy!_M128A @rsp")
        assert not dt.is_error, text(dt)
        assert re.search(r"\+0x000 Low\s+: 0x1400015ee", text(dt)), text(dt)
        assert SAMPLE_TRAILER.fullmatch(trailer(dt))

        # A failing command is an error result that still ends with the trailer, and ends
        # its line: the command after it is named as not run.
        bad = await command(client, "dt crashy!NoSuchType; k", format="json")
        assert bad.is_error and bad.structured_content["ok"] is False
        assert "not run: k" in bad.structured_content["output"]

        closed = await client.call_tool("close", {})
        assert closed.structured_content == {"status": "closed"}
        gone = await refused(client, "command", line="k")
        assert gone["kind"] == "not_attached"


async def test_ntoseye_refusals(ntoseye: Target) -> None:
    async with ntoseye.connect() as client:
        none = await refused(client, "command", line="k")
        assert none["code"] == INVALID_REQUEST and "no debugger session is active" in none["message"]
        assert "open" in none["hint"]
        nothing = await refused(client, "close")
        assert nothing["kind"] == "not_attached"
        for backend in ("kd", "kdnet", "memory"):
            unserved = await refused(client, "open", backend=backend)
            assert unserved["kind"] == "not_available" and backend in unserved["message"], unserved
            assert "backend gdb" in unserved["hint"] and "backend dump" in unserved["hint"]
        missing = await refused(client, "open", backend="dump")
        assert missing["code"] == INVALID_PARAMS and "connect" in missing["message"]
        outside = await refused(client, "open", backend="dump", connect="/etc/passwd")
        assert outside["kind"] == "path_not_allowed" and "--allow-dir" in outside["hint"], outside
        # A failed open leaves the slot free.

        assert not (await client.call_tool("open", {"backend": "dump", "connect": str(SAMPLE)})).is_error
        again = await refused(client, "open", backend="dump", connect=str(SAMPLE))
        assert "already active" in again["message"] and "close" in again["hint"]
        too_long = await refused(client, "command", line="k", timeout_ms=300001)
        assert too_long["code"] == INVALID_PARAMS and "300000" in too_long["message"]
        assert (await client.call_tool("close", {})).structured_content == {"status": "closed"}


async def test_ntoseye_kernel_dump(ntoseye: Target) -> None:
    async with ntoseye.connect() as client:
        assert not (await client.call_tool("open", {"backend": "dump", "connect": str(KERNEL_DUMP)})).is_error
        k = await command(client, "k", format="json")
        assert not k.is_error, text(k)
        target = k.structured_content["target"]
        # The kernel's base is ntoskrnl's; the symbol at rip is in it.
        assert target["kernel_base"] == "0xfffff8047ba00000", target
        assert target["symbol"].startswith("ntoskrnl+") and target["stopped_process"] is None
        assert (await client.call_tool("close", {})).structured_content == {"status": "closed"}


async def test_ntoseye_session_closed_by_the_server_frees_the_slot(scratch: Path) -> None:
    with serve("stdio", scratch, profile_args(scratch, "ntoseye", "--idle-timeout", "1")) as target:
        async with target.connect() as client:
            assert not (await client.call_tool("open", {"backend": "dump", "connect": str(SAMPLE)})).is_error
            await anyio.sleep(2.5)  # the sweeper closes the unused session
            gone = await refused(client, "command", line="k")
            assert gone["kind"] == "not_attached", gone
            assert not (await client.call_tool("open", {"backend": "dump", "connect": str(SAMPLE)})).is_error
            assert not (await command(client, "k")).is_error


@pytest.fixture(params=["stdio", "http"])
def ntoseye_on_sample(request: pytest.FixtureRequest, scratch: Path) -> Iterator[Target]:
    """An ntoseye server started with ntoseye's --dump flag."""
    with serve(request.param, scratch, profile_args(scratch, "ntoseye", "--dump", str(SAMPLE))) as target:
        yield target


async def test_ntoseye_startup_dump(ntoseye_on_sample: Target) -> None:
    async with ntoseye_on_sample.connect() as client:
        k = await command(client, "k")
        assert not k.is_error and "crashy!mode_null+0xe" in text(k)
        assert SAMPLE_TRAILER.fullmatch(trailer(k))


def test_ntoseye_startup_backend_not_available(scratch: Path) -> None:
    ran = subprocess.run(
        [*ntdbg_command(), *profile_args(scratch, "ntoseye", "--backend", "kd", "--connect", "/tmp/kd.sock")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert ran.returncode == 2 and "backend kd is not available" in ran.stderr, ran.stderr


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_ntoseye_gdb_run_control(program, scratch: Path, transport: str) -> None:  # noqa: F811
    """open gdb -> bp -> g (stops in time) -> g with a short wait (still running) -> a halted-only
    command that waits, then is reported not run -> break -> close."""
    exe, symbols = program
    stub = GdbServer(exe)
    try:
        with serve(transport, scratch, profile_args(scratch, "ntoseye")) as target:
            async with target.connect() as client:
                opened = await client.call_tool("open", {"backend": "gdb", "connect": f"127.0.0.1:{stub.port}"})
                assert opened.structured_content["status"] == "connected", opened
                func = symbols["ntdbg_target_func"]
                assert not (await command(client, f"bp {func:#x}")).is_error
                hit = await command(client, "g", timeout_ms=5000)
                assert not hit.is_error and text(hit).startswith("Breakpoint 0 hit"), text(hit)
                assert trailer(hit).startswith("[target halted @ ") and f"{func:#x}" in trailer(hit)

                assert not (await command(client, "bd 0")).is_error
                running = await command(client, "g", timeout_ms=100, format="json")
                assert running.structured_content["target"]["running"] is True
                assert trailer(await command(client, "", timeout_ms=50)) == "[target running]"
                waited = await command(client, "k", timeout_ms=200)
                assert waited.is_error and trailer(waited) == "[target running]", text(waited)

                stopped = await command(client, "break")
                assert not stopped.is_error, text(stopped)
                assert trailer(stopped).startswith("[target halted @ "), text(stopped)
                assert not (await command(client, "k")).is_error
                assert (await client.call_tool("close", {})).structured_content == {"status": "closed"}
    finally:
        stub.stop()
