"""The drop-in profiles (`ntdbg mcp --profile mcp-windbg|windbg-mcp`), used the way users of
those servers use them, over stdio and streamable HTTP.

Dumps come from the repository's testdata/ and from the shared corpus (../shared/testdata, or
$NTDBG_TESTDATA), which every profile server is allowed to read.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO, SAMPLE, HttpServer, Target, mcp_args, ntdbg_command, start_http, under_wine
from helpers import call, err, file_name, ok, text

pytestmark = pytest.mark.anyio


def shared_testdata() -> Path:
    """The shared corpus, found as ntdbg_testutil::testdata() finds it."""
    if env := os.environ.get("NTDBG_TESTDATA"):
        return Path(env)
    for ancestor in REPO.parents:
        candidate = ancestor / "shared" / "testdata"
        if candidate.is_dir():
            return candidate
    raise RuntimeError("shared test data not found: set NTDBG_TESTDATA or place shared/testdata beside the repository")


SHARED = shared_testdata()
KERNEL_DUMP = SHARED / "rizin-testbins" / "dmp" / "triage_x64.dmp"
# (dump, text `kb` must show)
USER_DUMPS = [
    (SAMPLE, "crashy!write_null"),
    (SHARED / "llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs/sigsegv.dmp", "KERNELBASE"),
    (SHARED / "google-breakpad/src/processor/testdata/minidump2.dmp", "test_app"),
]

# name -> {parameter: (JSON type, required)}: the contract users of each server rely on.
OPEN_PARAMS = {
    "dump_path": ("string", True),
    "include_stack_trace": ("boolean", False),
    "include_modules": ("boolean", False),
    "include_threads": ("boolean", False),
    "symbols_path": ("string", False),
    "timeout_seconds": ("integer", False),
}
REMOTE_PARAMS = {**{k: v for k, v in OPEN_PARAMS.items() if k != "dump_path"}, "connection_string": ("string", True)}
RUN_PARAMS = {"session_id": ("string", True), "command": ("string", True), "timeout_seconds": ("integer", False)}
MCP_WINDBG_TOOLS = {
    "list_dumps": {"directory_path": ("string", False), "recursive": ("boolean", False)},
    "open_cdb_dump": OPEN_PARAMS,
    "open_kd_dump": OPEN_PARAMS,
    "run_cdb_command": RUN_PARAMS,
    "run_kd_command": RUN_PARAMS,
    "close_cdb_session": {"session_id": ("string", True)},
    "close_kd_session": {"session_id": ("string", True), "resume": ("boolean", False)},
    "open_cdb_remote": REMOTE_PARAMS,
    "open_kd_session": REMOTE_PARAMS,
    "send_ctrl_break": {"session_id": ("string", False), "dump_path": ("string", False), "connection_string": ("string", False)},
    "wait_for_break": {"session_id": ("string", True), "timeout_seconds": ("integer", False)},
    # mcp-windbg 0.x (v0.2 to v0.15): sessions named by dump path.
    "open_windbg_dump": {k: v for k, v in OPEN_PARAMS.items() if k != "timeout_seconds"},
    "open_windbg_remote": {k: v for k, v in REMOTE_PARAMS.items() if k not in ("timeout_seconds", "symbols_path")},
    "run_windbg_cmd": {
        "dump_path": ("string", False),
        "connection_string": ("string", False),
        "command": ("string", True),
        "symbols_path": ("string", False),
    },
    "close_windbg_dump": {"dump_path": ("string", True)},
    "close_windbg_remote": {"connection_string": ("string", True)},
    "list_windbg_dumps": {"directory_path": ("string", False), "recursive": ("boolean", False)},
}
WINDBG_MCP_TOOLS = {
    "wm_session": {},
    "wm_run_cmd": {
        "cmd": ("string", True),
        "timeout_ms": ("integer", False),
        "output_file": ("string", False),
        "preview_bytes": ("integer", False),
    },
    "wm_wait_event": {"kinds": ("array", True), "timeout_ms": ("integer", False), "since_ms": ("integer", False)},
    "wm_break_in": {"timeout_ms": ("integer", False)},
    "wm_analyze_crash": {"output_file": ("string", False)},
    "wm_detach": {},
    "wm_shutdown": {},
}


def profile_args(scratch: Path, profile: str, *extra: str) -> list[str]:
    return [*mcp_args(scratch), "--allow-dir", str(SHARED), "--profile", profile, *extra]


@pytest.fixture(scope="module")
def mcp_windbg_http(scratch: Path) -> Iterator[HttpServer]:
    server = start_http([*profile_args(scratch, "mcp-windbg"), "--http", "127.0.0.1:0"])
    yield server
    server.stop()


@pytest.fixture(params=["stdio", "http"])
def mcp_windbg(request: pytest.FixtureRequest, scratch: Path) -> Target:
    http = request.getfixturevalue("mcp_windbg_http") if request.param == "http" else None
    return Target(request.param, "legacy", scratch, http, profile_args(scratch, "mcp-windbg"))


@pytest.fixture(params=["stdio", "http"])
def windbg_mcp(request: pytest.FixtureRequest, scratch: Path) -> Iterator[Target]:
    """A windbg-mcp server on the sample dump; HTTP servers are per test (wm_detach ends them)."""
    args = profile_args(scratch, "windbg-mcp", "--dump", str(SAMPLE))
    if request.param == "stdio":
        yield Target("stdio", "legacy", scratch, None, args)
        return
    server = start_http([*args, "--http", "127.0.0.1:0"])
    yield Target("http", "legacy", scratch, server, args)
    server.stop()


def check_tools(tools, expected: dict[str, dict[str, tuple[str, bool]]]) -> None:
    assert {t.name for t in tools} == set(expected)
    for tool in tools:
        schema = tool.input_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        assert tool.description and len(tool.description) > 40, tool.name
        props = schema.get("properties", {})
        want = expected[tool.name]
        assert set(props) == set(want), tool.name
        for name, (kind, required) in want.items():
            assert props[name].get("type") == kind, f"{tool.name}.{name}: {props[name]}"
            assert props[name].get("description"), f"{tool.name}.{name} is not described"
            assert (name in schema.get("required", [])) == required, f"{tool.name}.{name}"


def first_line(result) -> str:
    return text(result).splitlines()[0]


# ---------------------------------------------------------------- mcp-windbg


async def test_mcp_windbg_tools_and_prompts(mcp_windbg: Target) -> None:
    async with mcp_windbg.connect() as client:
        check_tools((await client.list_tools()).tools, MCP_WINDBG_TOOLS)
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(prompts) == {"dump-triage", "remote-triage", "kernel-triage"}
        assert [a.name for a in prompts["dump-triage"].arguments] == ["dump_path"]
        prompt = await client.get_prompt("dump-triage", {"dump_path": "crash.dmp"})
        body = " ".join(getattr(m.content, "text", "") for m in prompt.messages)
        assert "open_cdb_dump" in body and "crash.dmp" in body
        bare = await client.get_prompt("kernel-triage")
        assert "open_kd_dump" in " ".join(getattr(m.content, "text", "") for m in bare.messages)


@pytest.mark.parametrize("dump,frame", USER_DUMPS, ids=lambda v: Path(v).name if isinstance(v, Path) else None)
async def test_mcp_windbg_scripted_triage(mcp_windbg: Target, dump: Path, frame: str) -> None:
    async with mcp_windbg.connect() as client:
        opened = await call(client, "open_cdb_dump", dump_path=str(dump), include_stack_trace=True)
        assert not opened.is_error, text(opened)
        line = first_line(opened)
        assert line.startswith("session_id: cdb-"), line
        sid = line.removeprefix("session_id: ")
        body = text(opened)
        assert "> .lastevent" in body and "> !analyze -v" in body and "> kb" in body

        kb = await call(client, "run_cdb_command", session_id=sid, command="kb", timeout_seconds=30)
        assert not kb.is_error, text(kb)
        assert text(kb).startswith("0:000> kb\n")
        assert frame.lower() in text(kb).lower()

        closed = await call(client, "close_cdb_session", session_id=sid)
        assert not closed.is_error and sid in text(closed)
        gone = err(await call(client, "run_cdb_command", session_id=sid, command="kb"))
        assert gone["code"] == "unknown_session"


async def test_mcp_windbg_kernel_dump(mcp_windbg: Target) -> None:
    async with mcp_windbg.connect() as client:
        opened = await call(
            client, "open_kd_dump", dump_path=str(KERNEL_DUMP), include_modules=True, include_threads=True
        )
        assert not opened.is_error, text(opened)
        sid = first_line(opened).removeprefix("session_id: ")
        assert sid.startswith("kd-")
        assert "0: kd> !analyze -v" in text(opened) and "0: kd> lm" in text(opened)
        kb = await call(client, "run_kd_command", session_id=sid, command="kb")
        assert not kb.is_error and text(kb).startswith("0: kd> kb\n"), text(kb)

        wrong = err(await call(client, "run_cdb_command", session_id=sid, command="kb"))
        assert wrong["code"] == "wrong_session_kind"
        assert "run_kd_command" in wrong["hint"]
        wrong = err(await call(client, "close_cdb_session", session_id=sid))
        assert "close_kd_session" in wrong["hint"]
        # A kd- prefix on a user-mode session is caught too.
        forged = err(await call(client, "run_kd_command", session_id="cdb-" + sid[3:], command="kb"))
        assert forged["code"] == "wrong_session_kind"

        assert not (await call(client, "close_kd_session", session_id=sid, resume=False)).is_error


async def test_mcp_windbg_errors(mcp_windbg: Target) -> None:
    async with mcp_windbg.connect() as client:
        kernel = err(await call(client, "open_cdb_dump", dump_path=str(KERNEL_DUMP)))
        assert kernel["code"] == "wrong_dump_kind" and "open_kd_dump" in kernel["hint"]
        user = err(await call(client, "open_kd_dump", dump_path=str(SAMPLE)))
        assert user["code"] == "wrong_dump_kind" and "open_cdb_dump" in user["hint"]

        opened = await call(client, "open_cdb_dump", dump_path=str(SAMPLE))
        sid = first_line(opened).removeprefix("session_id: ")
        mismatch = err(await call(client, "run_kd_command", session_id=sid, command="kb"))
        assert mismatch["code"] == "wrong_session_kind"
        assert "run_cdb_command" in mismatch["hint"] and "cdb" in mismatch["message"]
        # Dumps never run: the live tools answer an error.
        assert err(await call(client, "send_ctrl_break", session_id=sid))["recoverable"] is False
        assert err(await call(client, "wait_for_break", session_id=sid, timeout_seconds=1))
        await call(client, "close_cdb_session", session_id=sid)

        bogus = err(await call(client, "run_cdb_command", session_id="s1-0000", command="kb"))
        assert bogus["code"] == "unknown_session" and "cdb-" in bogus["message"]
        for tool in ("open_cdb_remote", "open_kd_session"):
            remote = err(await call(client, tool, connection_string="tcp:Port=5005,Server=host"))
            assert remote["code"] == "not_available" and tool in remote["message"]
        missing = err(await call(client, "open_cdb_dump", dump_path=str(SHARED / "no-such.dmp")))
        assert missing["code"] == "file_not_found"
        typed = err(await call(client, "run_cdb_command", session_id=sid, command="kb", timeout_seconds="x"))
        assert typed["code"] == "invalid_arguments"


async def test_mcp_windbg_0x_tool_names(mcp_windbg: Target, tmp_path: Path) -> None:
    """The 0.x generation: sessions named by dump path, user and kernel dumps through one tool."""
    dump = tmp_path / "legacy.dmp"
    dump.write_bytes(SAMPLE.read_bytes())
    async with mcp_windbg.connect() as client:
        listing = await call(client, "list_windbg_dumps", directory_path=str(SAMPLE.parent))
        assert not listing.is_error and SAMPLE.name in text(listing)
        opened = await call(
            client,
            "open_windbg_dump",
            dump_path=str(SAMPLE),
            include_stack_trace=True,
            include_modules=False,
            include_threads=False,
        )
        assert not opened.is_error, text(opened)
        assert "> !analyze -v" in text(opened) and "> kb" in text(opened)
        kernel = await call(client, "open_windbg_dump", dump_path=str(KERNEL_DUMP))
        assert not kernel.is_error and "0: kd> !analyze -v" in text(kernel), text(kernel)

        ran = await call(client, "run_windbg_cmd", dump_path=str(SAMPLE), command="kn 1")
        assert not ran.is_error and "crashy!write_null" in text(ran), text(ran)
        # A dump not opened yet is opened by run_windbg_cmd, as 0.x did.
        fresh = await call(client, "run_windbg_cmd", dump_path=str(SAMPLE), command="r rip")
        assert text(fresh).startswith("0:000> r rip\n"), text(fresh)
        assert err(await call(client, "send_ctrl_break", dump_path=str(SAMPLE)))["code"] == "not_live"

        closed = await call(client, "close_windbg_dump", dump_path=str(SAMPLE))
        assert not closed.is_error and "closed" in text(closed)
        again = await call(client, "close_windbg_dump", dump_path=str(SAMPLE))
        assert not again.is_error and "no open session" in text(again)
        assert err(await call(client, "run_windbg_cmd", command="k"))["code"] == "invalid_arguments"
        for tool, args in [
            ("run_windbg_cmd", {"connection_string": "tcp:Port=5005,Server=host", "command": "k"}),
            ("open_windbg_remote", {"connection_string": "tcp:Port=5005,Server=host"}),
            ("close_windbg_remote", {"connection_string": "tcp:Port=5005,Server=host"}),
        ]:
            assert err(await call(client, tool, **args))["code"] == "not_available", tool


async def test_mcp_windbg_list_dumps(mcp_windbg: Target) -> None:
    async with mcp_windbg.connect() as client:
        listing = await client.call_tool("list_dumps", {"directory_path": str(KERNEL_DUMP.parent)})
        assert not listing.is_error
        rows = text(listing).splitlines()
        line = next(row for row in rows if file_name(row.split("  (")[0]) == KERNEL_DUMP.name)
        assert under_wine() or line.startswith(f"{KERNEL_DUMP.resolve()}  ("), line
        assert "kernel" in line and "open_kd_dump" in line, line


# ---------------------------------------------------------------- windbg-mcp


async def test_windbg_mcp_tools(windbg_mcp: Target) -> None:
    async with windbg_mcp.connect() as client:
        check_tools((await client.list_tools()).tools, WINDBG_MCP_TOOLS)


async def test_windbg_mcp_flow(windbg_mcp: Target, scratch: Path) -> None:
    async with windbg_mcp.connect() as client:
        session = ok(await call(client, "wm_session"))
        assert session["attached"] is True and session["target_kind"] == "dump"
        assert session["dump_kind"] == "user" and session["target"].endswith("crashy-x64-null.dmp")
        assert json.loads(text(await call(client, "wm_session"))) == session

        out = scratch / f"wm-{windbg_mcp.transport}.txt"
        out.unlink(missing_ok=True)
        run = ok(await call(client, "wm_run_cmd", cmd="kn; lm", timeout_ms=20000, output_file=str(out)))
        assert run["ok"] is True and run["commands_total"] == 2
        assert [r["status"] for r in run["results"]] == ["succeeded", "succeeded"]
        assert "crashy!write_null" in run["output"] and run["output_file_written"] is True
        assert "crashy!write_null" in out.read_text()

        failed = await call(client, "wm_run_cmd", cmd="r rip; bogus; kn")
        assert failed.is_error
        body = failed.structured_content
        assert body["ok"] is False and body["failed_command_index"] == 1
        assert [r["status"] for r in body["results"]] == ["succeeded", "failed", "not_executed"]

        report = ok(await call(client, "wm_analyze_crash"))
        assert "crashy!write_null" in report["signature"]

        assert err(await call(client, "wm_break_in", timeout_ms=1000))["code"] == "not_live"
        assert err(await call(client, "wm_wait_event", kinds=["break"], timeout_ms=1000))["code"] == "not_live"
        assert err(await call(client, "wm_wait_event", kinds=["nonsense"]))["code"] == "invalid_arg"

        detached = ok(await call(client, "wm_detach"))
        assert detached["ok"] is True and detached["target_detached"] is False
        assert ok(await call(client, "wm_session"))["attached"] is False
        assert err(await call(client, "wm_run_cmd", cmd="kb"))["code"] == "not_attached"
        ok(await call(client, "wm_shutdown"))
        assert err(await call(client, "wm_run_cmd", cmd="kb"))["code"] == "disconnected"


def test_windbg_mcp_startup_errors(scratch: Path) -> None:
    def run(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*ntdbg_command(), *mcp_args(scratch), *extra],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )

    attach = run("--profile", "windbg-mcp", "--attach", "gdb:127.0.0.1:9")
    assert attach.returncode != 0 and "--attach gdb:127.0.0.1:9" in attach.stderr, attach.stderr
    assert attach.stdout == ""
    missing = run("--profile", "windbg-mcp", "--dump", str(scratch / "missing.dmp"))
    assert missing.returncode != 0 and "file_not_found" in missing.stderr, missing.stderr
    wrong_profile = run("--dump", str(SAMPLE))
    assert wrong_profile.returncode == 2 and "--profile windbg-mcp" in wrong_profile.stderr
