"""The dump workflow and every error case, through the official client."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from conftest import SAMPLE, TESTDATA, Target
from helpers import call, err, file_name, ok, open_dump, ran, text

pytestmark = pytest.mark.anyio


async def test_triage_in_three_calls(target: Target) -> None:
    async with target.connect() as client:
        opened = await call(client, "open_dump", path=str(SAMPLE))
        first = ok(opened)
        sid = first["session_id"]
        assert text(opened).splitlines()[0] == sid
        assert "crashy!write_null" in first["signature"]
        assert first["event"]["name"] == "EXCEPTION_ACCESS_VIOLATION"

        report = ok(await call(client, "analyze_crash", session_id=sid))
        assert "crashy!write_null" in report["signature"]
        assert report["faulting_module"]["name"] == "crashy.exe"
        assert report["stack"][0]["function"].startswith("write_null")

        run = ok(await call(client, "run_command", session_id=sid, command="kn; lm"))
        assert [r["status"] for r in run["results"]] == ["succeeded", "succeeded"]
        assert run["trailer"] == "[dump]"
        assert run["commands_executed"] == 2 and run["commands_skipped"] == 0
        assert "crashy!write_null+0x7" in run["results"][0]["output"]
        assert all(r["command_id"] and not r["truncated"] for r in run["results"])

        closed = ok(await call(client, "close_session", session_id=sid))
        assert closed["session_id"] == sid
        gone = err(await call(client, "analyze_crash", session_id=sid))
        assert gone["code"] == "unknown_session"


async def test_batch_that_fails_midway(target: Target) -> None:
    async with target.connect() as client:
        sid = await open_dump(client, SAMPLE)
        # On a dump the batch goes on after a failure unless on_error says stop.
        run = ran(await call(client, "run_command", session_id=sid, command="r rip; bogus; kn; lm"))
        assert [r["status"] for r in run["results"]] == ["succeeded", "failed", "succeeded", "succeeded"]
        assert run["results"][1]["error"]["code"] == "unknown_command"
        assert run["commands_executed"] == 4 and run["commands_skipped"] == 0
        run = ran(await call(client, "run_command", session_id=sid, command="r rip; bogus; kn; lm", on_error="stop"))
        assert [r["status"] for r in run["results"]] == ["succeeded", "failed", "not_executed", "not_executed"]
        assert run["commands_executed"] == 2 and run["commands_skipped"] == 2


async def test_json_format_returns_typed_results(target: Target) -> None:
    async with target.connect() as client:
        sid = await open_dump(client, SAMPLE)
        run = ok(await call(client, "run_command", session_id=sid, command=".ecxr; kn", format="json"))
        assert run["results"][1]["result"]["kind"] == "stack"
        # 64-bit values are hex strings: JSON numbers above 2^53 would be rounded by some clients.
        assert run["results"][1]["result"]["frames"][0]["instruction"] == "0x140001517"


async def test_dv_typed_result(target: Target) -> None:
    async with target.connect() as client:
        sid = await open_dump(client, TESTDATA / "locals" / "x64-O2" / "locals.dmp")
        run = ok(await call(client, "run_command", session_id=sid, command=".ecxr; .frame 1; dv /t /v", format="json"))
        assert [r["status"] for r in run["results"]] == ["succeeded"] * 3
        locals_ = run["results"][2]["result"]
        assert locals_["kind"] == "locals" and locals_["frame"] == 1
        assert locals_["function"].startswith("walk_points")
        by_name = {v["name"]: v for v in locals_["variables"]}
        assert list(by_name) == ["pts", "count", "limit", "total", "i"]
        assert by_name["pts"]["kind"] == "parameter" and by_name["total"]["kind"] == "local"
        assert by_name["total"]["available"] and by_name["total"]["location"] == "@ebx"
        assert by_name["limit"]["location"] == "@r14d"
        for name in ("count", "i"):
            assert not by_name[name]["available"]
            assert by_name[name]["value"] == "<value unavailable>"
        assert all({"name", "kind", "type", "value", "location", "available"} <= set(v) for v in by_name.values())


async def test_address_and_search_return_typed_results(target: Target) -> None:
    async with target.connect() as client:
        sid = await open_dump(client, SAMPLE)
        command = '!address @rsp; s -a crashy L?3f000 "crashy"; !dh -f crashy'
        run = ok(await call(client, "run_command", session_id=sid, command=command, format="json"))
        assert [r["status"] for r in run["results"]] == ["succeeded"] * 3
        regions = run["results"][0]["result"]
        assert regions["kind"] == "regions"
        (region,) = regions["regions"]
        # Wine's dumps have no MemoryInfoList: the region is derived from the thread's stack.
        assert region["source"] == "derived" and region["usage"] == "Stack" and region["thread"] == 0
        assert int(region["base"], 16) < int(region["end"], 16)
        hits = run["results"][1]["result"]
        assert hits["kind"] == "search_hits" and hits["truncated"] is False
        assert hits["hits"] and all(h["address"].startswith("0x") for h in hits["hits"])
        headers = run["results"][2]["result"]
        assert headers["kind"] == "pe_headers" and headers["module"] == "crashy"


async def test_read_output_pages_the_whole_text(target: Target) -> None:
    async with target.connect() as client:
        sid = await open_dump(client, SAMPLE)
        run = ok(await call(client, "run_command", session_id=sid, command="dq @rsp L2000"))
        first = run["results"][0]
        assert first["truncated"] is True
        total = first["bytes_total"]
        assert total > 16 * 1024 and len(first["output"]) < total
        whole, offset = "", 0
        while True:
            page = ok(await call(client, "read_output", command_id=first["command_id"], offset=offset, limit=8000))
            assert page["bytes_total"] == total
            whole += page["text"]
            if page["next_offset"] is None:
                break
            offset = page["next_offset"]
        assert len(whole.encode()) == total
        grep = ok(await call(client, "read_output", command_id=first["command_id"], grep=whole.splitlines()[3][:17]))
        assert grep["matches"] == 1


async def test_two_sessions_at_once(target: Target) -> None:
    async with target.connect() as client:
        ids: dict[str, str] = {}

        async def opener(name: str) -> None:
            ids[name] = await open_dump(client, TESTDATA / name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(opener, "crashy-x64-null.dmp")
            tg.start_soon(opener, "crashy-x64-divzero.dmp")
        assert len(set(ids.values())) == 2
        codes: dict[str, str] = {}

        async def analyze(name: str) -> None:
            codes[name] = ok(await call(client, "analyze_crash", session_id=ids[name]))["event"]["code"]

        async with anyio.create_task_group() as tg:
            for name in ids:
                tg.start_soon(analyze, name)
        assert codes == {"crashy-x64-null.dmp": "0xc0000005", "crashy-x64-divzero.dmp": "0xc0000094"}
        listing = ok(await call(client, "list_sessions"))
        listed = {s["session_id"] for s in listing["sessions"]}
        assert listed >= set(ids.values()) if not target.anonymous else listed == set()
        # Both dumps are of one build: its symbols were parsed once and shared.
        shared = listing["shared_symbols"]
        assert shared["hits"] >= 1 and shared["loads"] >= 1, shared
        assert 0 < shared["bytes"] <= shared["limit"], shared
        for sid in ids.values():
            ok(await call(client, "close_session", session_id=sid))


async def test_list_dumps(target: Target) -> None:
    async with target.connect() as client:
        listing = ok(await call(client, "list_dumps", directory=str(TESTDATA), recursive=True))
    by_name = {file_name(d["path"]): d for d in listing["dumps"]}
    null = by_name["crashy-x64-null.dmp"]
    assert (null["kind"], null["arch"], null["code"]) == ("user", "x64", "0xc0000005")
    assert "EXCEPTION_ACCESS_VIOLATION" in null["headline"]
    assert by_name["crashy-x86-null.dmp"]["arch"] == "x86"


async def test_error_cases(target: Target) -> None:
    scratch = target.scratch
    async with target.connect() as client:
        e = err(await call(client, "open_dump", path=str(TESTDATA / "no-such.dmp")))
        assert e["code"] == "file_not_found"
        e = err(await call(client, "open_dump", path=str(scratch / "notes.dmp")))
        assert e["code"] == "not_a_dump" and e["recoverable"] is False
        cut = ok(await call(client, "open_dump", path=str(scratch / "cut.dmp")))  # read as far as it goes
        report = ok(await call(client, "analyze_crash", session_id=cut["session_id"], format="json"))
        assert any("the dump is cut short" in limit for limit in report["limitations"])
        e = err(await call(client, "open_dump", path="/etc/passwd"))
        assert e["code"] == "path_not_allowed"
        e = err(await call(client, "open_dump", path=str(TESTDATA / ".." / ".." / "etc" / "passwd")))
        assert e["code"] == "path_not_allowed"
        e = err(await call(client, "list_dumps", directory="/"))
        assert e["code"] == "path_not_allowed"

        sid = await open_dump(client, SAMPLE)
        e = err(await call(client, "run_command", session_id="s999-beef", command="kb"))
        assert e["code"] == "unknown_session"
        # The hint lists the caller's open sessions (none to a client without an identity).
        assert (sid in e["hint"]) is not target.anonymous, e
        run = ran(await call(client, "run_command", session_id=sid, command=".sympath /etc"))
        assert run["results"][0]["error"]["code"] == "path_not_allowed"
        run = ran(await call(client, "run_command", session_id=sid, command="frobnicate"))
        assert run["results"][0]["error"]["code"] == "unknown_command"
        e = err(await call(client, "run_command", session_id=sid, command='.echo "unterminated'))
        assert e["code"] == "syntax_error"
        e = err(await call(client, "run_command", session_id=sid, command=";".join(["r"] * 65)))
        assert e["code"] == "too_many_commands"
        e = err(await call(client, "run_command", session_id=sid, command="kb", output_file="/tmp/ntdbg-out.txt"))
        assert e["code"] == "path_not_allowed"
        e = err(await call(client, "read_output", command_id="c424242-0000"))
        assert e["code"] == "unknown_output"
        e = err(await call(client, "attach", target="gdb:127.0.0.1:1", timeout_seconds=2))
        assert e["code"] == "attach_refused" and "127.0.0.1:1" in e["message"]


async def test_output_file(target: Target) -> None:
    out = target.scratch / f"kb-{target.transport}-{target.mode}.txt"
    out.unlink(missing_ok=True)
    async with target.connect() as client:
        sid = await open_dump(client, SAMPLE)
        run = ok(await call(client, "run_command", session_id=sid, command="kb", output_file=str(out)))
        assert run["output_file"]["written"] is True
        assert "crashy!write_null" in out.read_text()
        e = err(await call(client, "run_command", session_id=sid, command="kb", output_file=str(out)))
        assert e["code"] == "file_exists"


async def test_triage_dumps(target: Target) -> None:
    async with target.connect() as client:
        result = ok(await call(client, "triage_dumps", directory=str(TESTDATA), recursive=True))
    assert result["dumps"] >= 11
    signatures = [b["signature"] for b in result["buckets"]]
    assert any("crashy!write_null" in s for s in signatures), signatures
    null = next(b for b in result["buckets"] if "crashy!write_null" in b["signature"])
    assert null["count"] >= 2 and null["representative"]["event"]["code"] == "0xc0000005"


async def test_triage_dumps_with_a_symbol_path(target: Target) -> None:
    # A dump alone in a folder: its PDB is found only through symbols_path, as with open_dump.
    folder = target.scratch / "triage-symbols"
    folder.mkdir(exist_ok=True)
    (folder / "x86-null.dmp").write_bytes((TESTDATA / "x86" / "crashy-x86-null.dmp").read_bytes())
    async with target.connect() as client:
        bare = ok(await call(client, "triage_dumps", directory=str(folder)))
        symbolized = ok(
            await call(client, "triage_dumps", directory=str(folder), symbols_path=str(TESTDATA / "x86"))
        )
        outside = err(await call(client, "triage_dumps", directory=str(folder), symbols_path="/etc"))
    assert [b["signature"] for b in bare["buckets"]] == ["AV_WRITE_NULL crashy+0x14ea"], bare
    assert [b["signature"] for b in symbolized["buckets"]] == [
        "AV_WRITE_NULL crashy!write_null / crashy!mode_null / crashy!main"
    ], symbolized
    frames = symbolized["buckets"][0]["representative"]["signature_frames"]
    assert [(f["frame"], f["role"]) for f in frames[:3]] == [(0, "named"), (1, "named"), (2, "named")]
    assert outside["code"] != "internal_error", outside


def shared_dump(rel: str) -> Path | None:
    """A dump of the shared corpus (beside the repository, or $NTDBG_TESTDATA), or None."""
    import os

    roots = [Path(os.environ["NTDBG_TESTDATA"])] if os.environ.get("NTDBG_TESTDATA") else []
    roots += [a / "shared" / "testdata" for a in Path(__file__).resolve().parents]
    return next((r / rel for r in roots if (r / rel).is_file()), None)


async def test_process_info_commands_give_typed_results(target: Target) -> None:
    handles = shared_dump("google-breakpad/src/processor/testdata/tiny-exe-with-cet-xsave.dmp")
    times = shared_dump(
        "llvm-lldb/packages/Python/lldbsuite/test/functionalities/postmortem/minidump/fizzbuzz_no_heap.dmp"
    )
    if handles is None or times is None:
        pytest.skip("the shared test corpus is not beside the repository")
    # The server may open files only in its allowed folders: work on copies in the scratch one.
    copies = {}
    for name, source in (("handles", handles), ("times", times)):
        copy = target.scratch / f"process-info-{name}.dmp"
        copy.write_bytes(source.read_bytes())
        copies[name] = copy
    async with target.connect() as client:
        sid = await open_dump(client, copies["handles"])
        run = ok(
            await call(client, "run_command", session_id=sid, command="!handle; !uniqstack", format="json")
        )
        listing, stacks = (r["result"] for r in run["results"])
        assert listing["kind"] == "handles"
        assert len(listing["handles"]) == 147
        assert listing["handles"][0] == {
            "handle": "0x4",
            "type": "File",
            "name": None,
            "attributes": "0x0",
            "granted_access": "0x12019f",
            "handle_count": 2,
            "pointer_count": 98303,
            "object_info_records": 0,
        }
        assert sum(t["count"] for t in listing["by_type"]) == 147
        assert stacks["kind"] == "unique_stacks" and stacks["total_threads"] == 1
        missing = ran(await call(client, "run_command", session_id=sid, command="!runaway"))
        assert missing["results"][0]["error"]["code"] == "no_thread_times"

        sid = await open_dump(client, copies["times"])
        run = ok(await call(client, "run_command", session_id=sid, command="!runaway 7", format="json"))
        result = run["results"][0]["result"]
        assert result["kind"] == "thread_times" and len(result["threads"]) == 1
        assert result["threads"][0]["index"] == 0
        assert "User Mode Time" in run["results"][0]["output"]
