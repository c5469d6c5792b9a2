"""Sessions and symbols over MCP, and errors that teach: reopening a dump answers with its
session, `.sympath+` within the allowed folders and configured servers, a batch with an unknown
command names the nearest command and what did not run, one recursion rule for the listing
tools, `read_output` in lines, and a second `close_session`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SAMPLE, TESTDATA, Target
from helpers import call, err, ok, ran, text

pytestmark = pytest.mark.anyio

X86_DUMP = TESTDATA / "x86" / "crashy-x86-null.dmp"


def private_copy(target: Target, source: Path, name: str) -> Path:
    """A copy of `source` in the scratch folder only this test (transport and mode) opens: the
    HTTP server is shared, so the shipped samples may be open in other tests' sessions."""
    folder = target.scratch / f"{name}-{target.transport}-{target.mode}"
    folder.mkdir(exist_ok=True)
    copy = folder / source.name
    if not copy.exists():
        shutil.copyfile(source, copy)
    return copy


async def test_reopening_a_dump_answers_with_its_session(target: Target) -> None:
    dump = private_copy(target, SAMPLE, "reopen")
    async with target.connect() as client:
        first = ok(await call(client, "open_dump", path=str(dump)))
        assert first["reused"] is False
        again = await call(client, "open_dump", path=str(dump.parent / ".." / dump.parent.name / dump.name))
        if target.anonymous:
            # Handing the open session out again would give its id to whoever opens the file.
            assert ok(again)["reused"] is False and ok(again)["session_id"] != first["session_id"]
            ok(await call(client, "close_session", session_id=ok(again)["session_id"]))
        else:
            assert ok(again)["session_id"] == first["session_id"] and ok(again)["reused"] is True
            assert "already open" in text(again)
        fresh = ok(await call(client, "open_dump", path=str(dump), new_session=True))
        assert fresh["reused"] is False and fresh["session_id"] != first["session_id"]
        for sid in (first["session_id"], fresh["session_id"]):
            ok(await call(client, "close_session", session_id=sid))
        reopened = ok(await call(client, "open_dump", path=str(dump)))
        assert reopened["reused"] is False
        ok(await call(client, "close_session", session_id=reopened["session_id"]))


async def test_a_changed_file_is_not_the_same_dump(target: Target) -> None:
    dump = private_copy(target, SAMPLE, "changed")
    async with target.connect() as client:
        first = ok(await call(client, "open_dump", path=str(dump)))
        shutil.copyfile(TESTDATA / "crashy-x64-divzero.dmp", dump)
        second = ok(await call(client, "open_dump", path=str(dump)))
        assert second["reused"] is False and second["session_id"] != first["session_id"]
        assert second["event"]["code"] == "0xc0000094"
        for sid in (first["session_id"], second["session_id"]):
            ok(await call(client, "close_session", session_id=sid))


async def test_sympath_plus_within_the_allowed_folders(target: Target) -> None:
    # The x86 dump alone in a folder: its PDB is found only once its folder is on the path.
    dump = private_copy(target, X86_DUMP, "sympath")
    async with target.connect() as client:
        sid = ok(await call(client, "open_dump", path=str(dump)))["session_id"]
        before = ok(await call(client, "run_command", session_id=sid, command="kn 3"))
        assert "crashy!write_null" not in before["results"][0]["output"]
        added = ok(await call(client, "run_command", session_id=sid, command=f".sympath+ {X86_DUMP.parent}; kn 3"))
        assert [r["status"] for r in added["results"]] == ["succeeded", "succeeded"], added
        assert str(X86_DUMP.parent) in added["results"][0]["output"]
        assert "crashy!write_null" in added["results"][1]["output"], added["results"][1]["output"]

        outside = ran(await call(client, "run_command", session_id=sid, command=".sympath+ /etc"))
        e = outside["results"][0]["error"]
        assert e["code"] == "path_not_allowed" and "testdata" in e["hint"], e
        server = ran(await call(client, "run_command", session_id=sid, command=".sympath+ srv*https://evil.example/s"))
        e = server["results"][0]["error"]
        assert e["code"] == "path_not_allowed" and "msdl.microsoft.com" in e["hint"], e
        # Refused changes leave the path as it was; .reload keeps it.
        shown = ok(await call(client, "run_command", session_id=sid, command=".reload; .sympath"))
        path_line = shown["results"][1]["output"]
        assert str(X86_DUMP.parent) in path_line and "/etc" not in path_line and "evil" not in path_line
        fixed = ok(await call(client, "run_command", session_id=sid, command=f".symfix+ {target.scratch / 'symcache'}"))
        assert "msdl.microsoft.com" in fixed["results"][0]["output"], fixed
        ok(await call(client, "close_session", session_id=sid))


async def test_a_batch_with_an_unknown_command_names_the_nearest_and_the_rest(target: Target) -> None:
    dump = private_copy(target, SAMPLE, "batch")
    async with target.connect() as client:
        sid = ok(await call(client, "open_dump", path=str(dump)))["session_id"]
        result = await call(client, "run_command", session_id=sid, command="kn 2; lmvv; r rip; ~*k", on_error="stop")
        run = ran(result)
        assert [r["status"] for r in run["results"]] == ["succeeded", "failed", "not_executed", "not_executed"]
        failed = run["results"][1]["error"]
        assert failed["code"] == "unknown_command" and "lmv" in failed["hint"], failed
        assert "not executed: r rip; ~*k" in text(result)
        # What to use instead of a WinDbg command ntdbg does not have.
        heap_result = await call(client, "run_command", session_id=sid, command="!heap -s")
        heap = ran(heap_result)
        assert "!address" in heap["results"][0]["error"]["hint"]
        assert "not executed" not in text(heap_result)
        ok(await call(client, "close_session", session_id=sid))


async def test_listing_tools_share_the_recursion_rule(target: Target) -> None:
    async with target.connect() as client:
        flat = ok(await call(client, "list_dumps", directory=str(TESTDATA)))
        deep = ok(await call(client, "list_dumps", directory=str(TESTDATA), recursive=True))
        triage_flat = ok(await call(client, "triage_dumps", directory=str(TESTDATA)))
        triage_deep = ok(await call(client, "triage_dumps", directory=str(TESTDATA), recursive=True))
    assert triage_flat["dumps"] == len(flat["dumps"]) > 0
    assert triage_deep["dumps"] == len(deep["dumps"]) > len(flat["dumps"])


async def test_read_output_pages_and_greps_in_lines(target: Target) -> None:
    dump = private_copy(target, SAMPLE, "lines")
    async with target.connect() as client:
        sid = ok(await call(client, "open_dump", path=str(dump)))["session_id"]
        first = ok(await call(client, "run_command", session_id=sid, command="dq @rsp L2000"))["results"][0]
        cid = first["command_id"]
        page = ok(await call(client, "read_output", command_id=cid, limit=100))
        assert page["offset"] == 1 and page["next_offset"] == 101
        lines = page["text"].splitlines()
        assert len(lines) == 100 and page["lines_total"] >= 1000
        # grep's line numbers are offsets: paging from one starts at that line.
        hit = ok(await call(client, "read_output", command_id=cid, grep=lines[42][:17]))
        assert hit["matches"] == 1 and hit["text"].startswith("43:"), hit
        at = ok(await call(client, "read_output", command_id=cid, offset=43, limit=1))
        assert at["text"].rstrip("\n") == lines[42]
        whole, offset = [], 1
        while offset is not None:
            p = ok(await call(client, "read_output", command_id=cid, offset=offset, limit=700))
            whole.append(p["text"])
            offset = p["next_offset"]
        assert len("".join(whole).encode()) == first["bytes_total"]
        ok(await call(client, "close_session", session_id=sid))


async def test_a_second_close_is_already_closed(target: Target) -> None:
    dump = private_copy(target, SAMPLE, "close")
    async with target.connect() as client:
        sid = ok(await call(client, "open_dump", path=str(dump)))["session_id"]
        first = ok(await call(client, "close_session", session_id=sid))
        assert first["already_closed"] is False
        second = await call(client, "close_session", session_id=sid)
        assert ok(second)["already_closed"] is True and ok(second)["session_id"] == sid
        assert "already closed" in text(second)
        e = err(await call(client, "close_session", session_id="s999-beef"))
        assert e["code"] == "unknown_session"
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["close_session"].annotations.idempotent_hint is True
    assert tools["open_dump"].annotations.idempotent_hint is True
