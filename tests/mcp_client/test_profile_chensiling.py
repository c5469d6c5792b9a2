"""The chensiling Windbg-MCP profile (`ntdbg mcp --profile chensiling --dump PATH`), used the
way its users use it, over stdio and streamable HTTP (started with `--http-port`, its own flag).

Every structured result is validated against the answering tool's own outputSchema; the
recommended investigation flow (context -> analyze -> backtrace -> disassemble -> evaluate +
read_memory -> output paging) runs on the sample null-write dump and must find the facts
below, which WinDbg shows for it: the write at crashy!write_null+0x7, `mov dword ptr
[rax],ecx` (bytes 89 08) with rax = 0, called from mode_null and main.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from mcp import Client

from conftest import REPO, SAMPLE, HttpServer, Target, mcp_args, start_http, stdio_params, under_wine
from helpers import text
from test_live import GdbServer, program  # noqa: F401 (the fixture is used by name)

pytestmark = pytest.mark.anyio

FAULT_ADDRESS = "0x140001517"
RETURN_TO_MODE_NULL = "0x1400015ee"

# name -> {parameter: (JSON type, required)}, as Windbg-MCP declares them.
INCLUDE_RAW = {"include_raw": ("boolean", False)}
TOOLS = {
    "windbg_context": {
        "scope": ("string", False),
        "include_modules": ("boolean", False),
        "module_limit": ("string", False),
        "list_limit": ("string", False),
        **INCLUDE_RAW,
    },
    "windbg_analyze": {"scope": ("string", False), **INCLUDE_RAW},
    "windbg_backtrace": {"depth": ("string", False), "show_params": ("string", False), "frame": ("string", False)},
    "windbg_disassemble": {"at": ("string", True), "count": ("string", False)},
    "windbg_evaluate": {"expression": ("string", True)},
    "windbg_lookup": {"what": ("string", True), "kind": ("string", False)},
    "windbg_read_memory": {"address": ("string", True), "size": ("string", False), "format": ("string", False)},
    "windbg_write_memory": {"address": ("string", True), "values": ("string", True)},
    "windbg_breakpoint": {
        "action": ("string", True),
        "target": ("string", False),
        "condition": ("string", False),
        "id": ("string", False),
    },
    "windbg_control": {"action": ("string", True), "count": ("string", False)},
    "windbg_sympath": {"action": ("string", True), "path": ("string", False), "module": ("string", False)},
    "windbg_session": {"action": ("string", False), "command_id": ("string", False)},
    "windbg_output": {"command_id": ("string", True), "offset": ("string", False), "limit": ("string", False)},
    "windbg_thread": {"thread": ("string", False), **INCLUDE_RAW},
    "windbg_module": {"module": ("string", True), **INCLUDE_RAW},
    "windbg_memory_mapping": {"address": ("string", True), **INCLUDE_RAW},
    "windbg_pool": {"address": ("string", True), "force": ("boolean", False), **INCLUDE_RAW},
    "windbg_blackbox": {"kind": ("string", False), **INCLUDE_RAW},
    "windbg_image_verify": {"module": ("string", True), **INCLUDE_RAW},
    "windbg_exec": {"command": ("string", True)},
}
ENUMS = {
    ("windbg_analyze", "scope"): ["crash", "hang", "quick"],
    ("windbg_lookup", "kind"): ["auto", "address", "symbol", "type", "function"],
    ("windbg_read_memory", "format"): ["auto", "byte", "b", "word", "w", "dword", "d", "qword", "q", "ascii", "a"],
    ("windbg_control", "action"): ["go", "g", "step_into", "t", "step_over", "p", "step_out", "gu"],
    ("windbg_session", "action"): ["status", "interrupt", "recover"],
    ("windbg_breakpoint", "action"): ["set", "list", "clear", "enable", "disable"],
}
# Windbg-MCP's annotation profiles: (readOnly, destructive, idempotent, openWorld).
READ_ONLY = (True, False, True, False)
ANNOTATIONS = {
    **{name: READ_ONLY for name in TOOLS},
    "windbg_analyze": (False, False, False, False),
    "windbg_backtrace": (False, False, False, False),
    "windbg_write_memory": (False, True, False, False),
    "windbg_breakpoint": (False, True, False, False),
    "windbg_control": (False, True, False, True),
    "windbg_sympath": (False, True, False, True),
    "windbg_session": (False, True, False, True),
    "windbg_exec": (False, True, False, True),
}
ENVELOPE_KEYS = {
    "schema_version", "ok", "tool", "execution_status", "core_result_status", "parse_status",
    "verification_status", "data", "inferences", "sources", "errors", "warnings", "limitations",
    "next_actions", "raw",
}


def args(scratch: Path, *extra: str, transport: str = "--stdio") -> list[str]:
    """The server's command line: stdio (`--stdio`), or HTTP with `transport="--http-port"`
    and a port in `extra` (without either the profile serves HTTP on 127.0.0.1:8080)."""
    chosen = [transport] if transport == "--stdio" else []
    return [*mcp_args(scratch), "--profile", "chensiling", *chosen, *extra]


@pytest.fixture(scope="module")
def chensiling_http(scratch: Path) -> Iterator[HttpServer]:
    server = start_http(args(scratch, "--dump", str(SAMPLE), "--http-port", "0", transport="--http-port"))
    yield server
    server.stop()


@pytest.fixture(params=["stdio", "http"])
def chensiling(request: pytest.FixtureRequest, scratch: Path) -> Target:
    http = request.getfixturevalue("chensiling_http") if request.param == "http" else None
    return Target(request.param, "legacy", scratch, http, args(scratch, "--dump", str(SAMPLE)))


class Session:
    """Calls tools and checks every envelope against the answering tool's outputSchema."""

    def __init__(self, client, tools) -> None:
        self.client = client
        self.schemas = {t.name: t.output_schema for t in tools}

    async def envelope(self, tool: str, **arguments) -> dict:
        result = await self.client.call_tool(tool, arguments)
        assert not result.is_error, text(result)
        envelope = result.structured_content
        assert isinstance(envelope, dict), f"{tool}: no structured content"
        jsonschema.validate(envelope, self.schemas[tool])
        assert set(envelope) == ENVELOPE_KEYS, set(envelope) ^ ENVELOPE_KEYS
        assert envelope["schema_version"] == "2.0" and envelope["tool"] == tool
        assert envelope["raw"] == ""
        for source in envelope["sources"]:
            assert source["execution_status"] != "completed" or source["command_id"], source
        for error in envelope["errors"]:
            assert {"code", "message", "stage", "recoverable"} <= set(error), error
        for action in envelope["next_actions"]:
            assert set(action) == {"tool", "args", "reason"} and action["tool"] in TOOLS, action
        for inference in envelope["inferences"]:
            assert inference["certainty"] == "inferred" and inference["basis"], inference
        # The text is a one-line summary: the envelope is not sent twice.
        assert '"structured_content":true' in text(result).replace(" ", "")
        return envelope

    async def ok(self, tool: str, **arguments) -> dict:
        envelope = await self.envelope(tool, **arguments)
        assert envelope["ok"], envelope["errors"]
        # not_run: the tool answered from the server's state without a command (windbg_output).
        assert envelope["execution_status"] in ("completed", "not_run"), envelope
        return envelope["data"]

    async def refused(self, tool: str, code: str, stage: str, **arguments) -> dict:
        envelope = await self.envelope(tool, **arguments)
        assert not envelope["ok"]
        assert envelope["core_result_status"] == "unavailable"
        assert [(e["code"], e["stage"]) for e in envelope["errors"]] == [(code, stage)], envelope["errors"]
        return envelope


async def test_tools_schemas_and_annotations(chensiling: Target) -> None:
    async with chensiling.connect() as client:
        tools = (await client.list_tools()).tools
        assert sorted(t.name for t in tools) == sorted(TOOLS)
        for tool in tools:
            schema = tool.input_schema
            jsonschema.Draft202012Validator.check_schema(schema)
            props = schema.get("properties", {})
            assert set(props) == set(TOOLS[tool.name]), tool.name
            for name, (kind, required) in TOOLS[tool.name].items():
                assert props[name].get("type") == kind, f"{tool.name}.{name}: {props[name]}"
                assert props[name].get("description"), f"{tool.name}.{name}"
                assert (name in schema.get("required", [])) == required, f"{tool.name}.{name}"
            for (owner, name), values in ENUMS.items():
                if owner == tool.name:
                    assert props[name]["enum"] == values
            a = tool.annotations
            hints = (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
            assert hints == ANNOTATIONS[tool.name], tool.name
            if tool.name == "windbg_exec":
                assert tool.output_schema is None, "windbg_exec answers raw text"
            else:
                jsonschema.Draft202012Validator.check_schema(tool.output_schema)


async def test_recommended_flow(chensiling: Target) -> None:
    async with chensiling.connect() as client:
        s = Session(client, (await client.list_tools()).tools)

        context = await s.ok("windbg_context")
        assert (context["target_mode"], context["session_kind"]) == ("user", "user_dump")
        assert context["capabilities"]["is_dump"] and not context["capabilities"]["can_resume"]
        assert context["last_event"]["code"] == "0xc0000005"
        assert context["current"]["call_site"].startswith("crashy!write_null")

        crash = await s.envelope("windbg_analyze", scope="crash")
        data = crash["data"]
        assert crash["ok"] and data["context_kind"] == "exception_context"
        assert data["faulting_ip"]["address"] == FAULT_ADDRESS
        assert data["faulting_ip"]["module"] == "crashy"
        assert data["event"]["name"] == "EXCEPTION_ACCESS_VIOLATION"
        assert data["signature"].startswith("AV_WRITE_NULL crashy!write_null")
        assert {"name": "rax", "value": "0x0"} in data["registers"]
        assert any(i["name"] == "null_deref" for i in crash["inferences"])
        assert any(a["tool"] == "windbg_disassemble" for a in crash["next_actions"])
        analyze_source = next(src for src in crash["sources"] if src["command"] == "!analyze -v")

        stack = await s.ok("windbg_backtrace", depth="3")
        frames = stack["frames"]
        assert [f["index"] for f in frames] == ["00", "01", "02"]
        assert [f["function"] for f in frames] == ["write_null(int)", "mode_null()", "main(int, char**)"]
        assert frames[0]["ret_addr"] == RETURN_TO_MODE_NULL and frames[0]["parameters"]

        locals_ = await s.envelope("windbg_backtrace", frame="2")
        assert locals_["verification_status"] == "verified" and locals_["data"]["selected_frame"] == 2
        assert {v["name"] for v in locals_["data"]["locals"]} >= {"argc", "argv"}

        code = await s.ok("windbg_disassemble", at="@rip", count="3")
        assert (code["input"], code["resolved_address"]) == ("@rip", FAULT_ADDRESS)
        first = code["instructions"][0]
        assert (first["bytes"], first["instruction"]) == ("8908", "mov dword ptr [rax],ecx")
        assert code["returned_count"] == 3 and code["range_complete"]

        value = await s.ok("windbg_evaluate", expression="@rax")
        assert (value["value"], value["decimal"]) == ("0x0", "0")
        memory = await s.ok("windbg_read_memory", address="@rsp", size="8", format="byte")
        assert [e["value"] for e in memory["data"]] == ["0xee", "0x15", "0x0", "0x40", "0x1", "0x0", "0x0", "0x0"]
        qword = await s.ok("windbg_read_memory", address="@rsp", size="1", format="q")
        assert qword["data"][0]["value"] == RETURN_TO_MODE_NULL

        # Page the whole !analyze -v output by its command_id, as Windbg-MCP's raw evidence.
        pages, offset = [], "0"
        while True:
            page = await s.ok("windbg_output", command_id=analyze_source["command_id"], offset=offset, limit="0x100")
            pages.append(page["output"])
            assert page["returned_size"] == len(page["output"].encode())
            if not page["has_more"]:
                break
            offset = str(page["next_offset"])
        whole = "".join(pages)
        assert len(pages) > 2 and len(whole.encode()) == analyze_source["raw_size"] == page["stored_size"]
        assert "write_null" in whole and "c0000005" in whole


async def test_lookups_modules_and_symbols(chensiling: Target) -> None:
    async with chensiling.connect() as client:
        s = Session(client, (await client.list_tools()).tools)
        found = await s.envelope("windbg_lookup", what="crashy!write*")
        assert found["inferences"][0]["value"] == "symbol"
        assert {x["function"] for x in found["data"]["symbols"]} >= {"write_null(int)"}
        near = await s.ok("windbg_lookup", what=FAULT_ADDRESS, kind="address")
        assert near["symbol"]["function"] == "write_null(int)" and near["symbol"]["function_offset"] == "0x7"
        none = await s.envelope("windbg_lookup", what="crashy!no_such_function_here", kind="symbol")
        assert none["ok"] and none["core_result_status"] == "empty" and none["data"]["found"] is False
        module = await s.ok("windbg_module", module="crashy")
        assert (module["module"]["start"], module["module"]["symbols"]) == ("0x140000000", "pdb")
        symbols = await s.ok("windbg_sympath", action="check", module="crashy")
        assert symbols["modules"][0]["name"] == "crashy"
        session = await s.ok("windbg_session")
        assert session["session_state"] == "idle" and session["interrupt_supported"] is False


async def test_wrong_kind_and_bad_input_get_the_envelope_error(chensiling: Target) -> None:
    async with chensiling.connect() as client:
        s = Session(client, (await client.list_tools()).tools)
        go = await s.refused("windbg_control", "command_unsupported_for_target", "target", action="go")
        assert go["verification_status"] == "not_run" and go["next_actions"]
        await s.refused("windbg_breakpoint", "command_unsupported_for_target", "target", action="list")
        pool = await s.refused("windbg_pool", "command_unsupported_for_target", "target", address="0")
        assert pool["next_actions"]
        await s.refused("windbg_thread", "command_unsupported_for_target", "target")
        await s.refused("windbg_image_verify", "not_available", "target", module="crashy")
        await s.refused("windbg_read_memory", "invalid_argument", "input", address="@rsp", size="0x401")
        await s.refused("windbg_disassemble", "unsafe_argument", "input", at="@rip; .shell")
        await s.refused("windbg_output", "evidence_not_found", "output", command_id="c999999-zzzz")
        hole = await s.refused("windbg_read_memory", "dump_data_unavailable", "target", address="0", size="4")
        assert hole["limitations"][0]["path"] == "data.data"
        interrupt = await s.envelope("windbg_session", action="interrupt")
        assert [e["code"] for e in interrupt["errors"]] == ["no_active_command"]


def shared_dump(relative: str) -> Path:
    """A dump of the shared corpus (../shared/testdata, or $NTDBG_TESTDATA)."""
    from test_profiles import SHARED

    return SHARED / relative


async def test_dump_without_exception_and_kernel_dump(scratch: Path) -> None:
    """A hang dump has no last event, a kernel minidump no pool data: limitations and
    target errors in the envelope, never a failed context."""
    hang = REPO / "testdata/hang/deadlock.dmp"
    target = Target("stdio", "legacy", scratch, None, args(scratch, "--dump", str(hang)))
    async with target.connect() as client:
        s = Session(client, (await client.list_tools()).tools)
        context = await s.envelope("windbg_context", scope="threads", list_limit="1")
        assert context["ok"] and "last_event" not in context["data"]
        assert [lim["code"] for lim in context["limitations"]][:1] == ["no_last_event"]
        assert context["data"]["threads_total"] > 1 and context["data"]["threads_truncated"] is True
        waits = await s.ok("windbg_analyze", scope="hang")
        assert waits["scope"] == "hang" and waits["waits"]

    kernel = shared_dump("rizin-testbins/dmp/triage_x64.dmp")
    target = Target("stdio", "legacy", scratch, None, [*args(scratch, "--dump", str(kernel)), "--allow-dir", str(kernel.parent)])
    async with target.connect() as client:
        s = Session(client, (await client.list_tools()).tools)
        context = await s.ok("windbg_context", scope="all")
        assert (context["target_mode"], context["session_kind"]) == ("kernel", "kernel_mini_dump")
        analysis = await s.ok("windbg_analyze")
        assert analysis["bugcheck_code"] == "0x1000007e"
        await s.refused("windbg_pool", "command_unsupported_for_dump_type", "target", address="0")
        await s.refused("windbg_memory_mapping", "not_available", "target", address="0")


async def test_exec_answers_raw_text(chensiling: Target) -> None:
    async with chensiling.connect() as client:
        result = await client.call_tool("windbg_exec", {"command": "r rip"})
        assert not result.is_error and result.structured_content is None
        assert text(result) == "rip=0000000140001517\n"
        # Windbg-MCP answers a failed command as text, not as a tool error.
        bad = await client.call_tool("windbg_exec", {"command": "nosuchcommand"})
        assert not bad.is_error and text(bad).startswith("error: ") and "unknown_command" in text(bad)


@pytest.mark.parametrize("flag", [["--connect", "tcp:localhost:50000"], ["--pid", "4242"]], ids=["connect", "pid"])
async def test_startup_forms_it_cannot_serve_answer_not_available(scratch: Path, flag: list[str]) -> None:
    if flag[0] == "--pid" and under_wine():
        pytest.skip("on Windows --pid attaches through the native Windows target")
    target = Target("stdio", "legacy", scratch, None, args(scratch, *flag))
    async with target.connect() as client:
        s = Session(client, (await client.list_tools()).tools)
        context = await s.refused("windbg_context", "not_available", "target")
        assert context["errors"][0]["recoverable"] is False
        assert flag[1].split(":")[-1] in context["errors"][0]["message"]
        assert context["next_actions"] and "--dump" in context["next_actions"][0]["reason"]


async def test_live_run_control_is_verified(program, scratch: Path) -> None:
    """On a live process (gdbserver): a breakpoint is set, `go` stops at it and `step_over`
    steps, each checked against the target's state afterwards."""
    exe, symbols = program
    stub = GdbServer(exe)
    try:
        target = Target("stdio", "legacy", scratch, None, args(scratch, "--attach", f"gdb:127.0.0.1:{stub.port}"))
        async with target.connect() as client:
            s = Session(client, (await client.list_tools()).tools)
            context = await s.ok("windbg_context")
            assert context["capabilities"]["is_live"] and context["target_state"] == "broken"
            func = symbols["ntdbg_target_func"]
            bp = await s.envelope("windbg_breakpoint", action="set", target=f"{func:#x}")
            assert bp["ok"] and bp["verification_status"] == "verified", bp
            assert bp["data"]["resolved_address"] == f"{func:#x}"
            assert [(b["id"], b["address"], b["enabled"]) for b in bp["data"]["breakpoints"]] == [("0", f"{func:#x}", True)]
            off = await s.envelope("windbg_breakpoint", action="disable", id="0")
            assert off["verification_status"] == "verified" and not off["data"]["breakpoints"][0]["enabled"]
            on = await s.envelope("windbg_breakpoint", action="enable", id="*")
            assert on["verification_status"] == "verified"
            missing = await s.envelope("windbg_breakpoint", action="clear", id="7")
            assert not missing["ok"] and missing["verification_status"] in ("failed", "indeterminate")
            go = await s.envelope("windbg_control", action="go")
            assert go["verification_status"] == "verified" and go["data"]["target_state"] == "broken", go
            rip = await s.ok("windbg_evaluate", expression="@rip")
            assert rip["value"] == f"{func:#x}"
            step = await s.envelope("windbg_control", action="p", count="2")
            assert step["ok"] and step["data"] == {"action": "step_over", "count": 2, "target_state": "broken"}
            cleared = await s.envelope("windbg_breakpoint", action="clear", id="0")
            assert cleared["verification_status"] == "verified" and cleared["data"]["breakpoints"] == []
            session = await s.ok("windbg_session")
            assert session["interrupt_supported"] is True and session["run_state"] == "halted"
            await s.refused("windbg_write_memory", "not_available", "target", address="@rsp", values="90")
    finally:
        stub.stop()


async def test_a_go_that_times_out_leaves_the_target_running(program, scratch: Path) -> None:
    """With Windbg-MCP's WINDBG_MCP_TIMEOUT=1, a `go` with nothing to stop it answers after a
    second with the target still running (unverified), and windbg_session interrupt breaks in."""
    exe, _ = program
    stub = GdbServer(exe)
    try:
        params = stdio_params(args(scratch, "--attach", f"gdb:127.0.0.1:{stub.port}"), REPO)
        params.env = {**os.environ, "WINDBG_MCP_TIMEOUT": "1"}
        async with Client(params, mode="legacy") as client:
            s = Session(client, (await client.list_tools()).tools)
            go = await s.envelope("windbg_control", action="go")
            assert go["data"]["target_state"] == "running" and go["verification_status"] == "indeterminate", go
            assert not go["ok"]
            assert go["next_actions"][0] == {"tool": "windbg_session", "args": {"action": "interrupt"}, "reason": go["next_actions"][0]["reason"]}
            stopped = await s.ok("windbg_session", action="interrupt")
            assert stopped["run_state"] == "halted"
            rip = await s.ok("windbg_evaluate", expression="@rip")
            assert rip["value"].startswith("0x")
    finally:
        stub.stop()


async def test_http_on_its_own_port_is_the_default(scratch: Path) -> None:
    """As chensiling's server, the profile serves streamable HTTP without a transport flag,
    on the port WINDBG_MCP_HTTP_PORT names (0 here: any free one; 8080 when unset)."""
    server = start_http(args(scratch, "--dump", str(SAMPLE), transport=""), env={"WINDBG_MCP_HTTP_PORT": "0"})
    try:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp"), server.url
        target = Target("http", "legacy", scratch, server, [])
        async with target.connect() as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "windbg_context" in names and len(names) == 20
    finally:
        server.stop()
