"""Files a long-running server reads that change or are no files: a dump, or a mapped Breakpad
`.sym` (818 KiB, read lazily from its mapping), cut while one session has it open gives that
session a clear error (on Linux the next touch of a vanished page used to kill the server with
SIGBUS, every session with it) while the other session goes on answering; a FIFO named like a
dump blocks no tool."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from conftest import TESTDATA, Target, under_wine
from helpers import call, err, ok, open_dump, ran

pytestmark = pytest.mark.anyio

BREAKPAD = Path("google-breakpad/src/processor/testdata")
TEST_APP_SYM = BREAKPAD / "symbols/test_app.pdb/5A9832E5287241C1838ED98914E9B7FF1/test_app.sym"


def folder_in(target: Target) -> Path:
    """A fresh folder inside the server's allowed scratch folder."""
    folder = target.scratch / f"changed-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    return folder


def cut(path: Path, length: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(length)


def shared_file(relative: Path) -> Path:
    """A file of the shared corpus, found as ntdbg_testutil::testdata() finds it."""
    roots = [Path(os.environ["NTDBG_TESTDATA"])] if "NTDBG_TESTDATA" in os.environ else []
    roots += [p / "shared" / "testdata" for p in TESTDATA.parents]
    for root in roots:
        if (root / relative).is_file():
            return root / relative
    pytest.skip(f"shared test data not found ({relative})")


async def run(client, sid: str, command: str) -> dict:
    return ran(await call(client, "run_command", session_id=sid, command=command))["results"][0]


@pytest.mark.skipif(under_wine(), reason="Windows refuses to truncate a file that is mapped")
async def test_a_dump_cut_under_one_session_leaves_the_other_answering(target: Target) -> None:
    folder = folder_in(target)
    cut_one, other = folder / "a.dmp", folder / "b.dmp"
    for copy in (cut_one, other):
        shutil.copy(TESTDATA / "crashy-x64-stack.dmp", copy)
    async with target.connect() as client:
        a, b = await open_dump(client, cut_one), await open_dump(client, other)
        stack = (await run(client, a, "kn"))["output"]
        assert (await run(client, b, "kn"))["output"] == stack

        cut(cut_one, 4096)
        failed = await run(client, a, "kn")
        assert failed["status"] == "failed"
        assert failed["error"]["code"] == "dump_changed"
        assert "a.dmp changed on disk while it was open: its size went from" in failed["error"]["message"]
        assert err(await call(client, "analyze_crash", session_id=a))["code"] == "dump_changed"

        # The server and the other session go on.
        assert (await run(client, b, "kn"))["output"] == stack
        ok(await call(client, "analyze_crash", session_id=b))
        sessions = ok(await call(client, "list_sessions"))["sessions"]
        # A client without an identity (stateless HTTP, no token) is listed nothing.
        listed = set() if target.anonymous else {a, b}
        assert listed <= {s["session_id"] for s in sessions}
        # Opening the file again reads it as it is now: a new session, on a dump cut short.
        again = ok(await call(client, "open_dump", path=str(cut_one)))
        assert again["session_id"] not in (a, b)


@pytest.mark.skipif(under_wine(), reason="Windows refuses to truncate a file that is mapped")
async def test_a_symbol_file_cut_under_one_session_leaves_the_other_answering(target: Target) -> None:
    folder = folder_in(target)
    sym_dir = folder / "symbols" / TEST_APP_SYM.parent.relative_to(BREAKPAD / "symbols")
    sym_dir.mkdir(parents=True)
    sym = sym_dir / "test_app.sym"
    shutil.copy(shared_file(TEST_APP_SYM), sym)
    dump = folder / "minidump2.dmp"
    shutil.copy(shared_file(BREAKPAD / "minidump2.dmp"), dump)
    async with target.connect() as client:
        with_symbols = ok(
            await call(client, "open_dump", path=str(dump), symbols_path=str(folder / "symbols"))
        )["session_id"]
        other = await open_dump(client, TESTDATA / "crashy-x64-null.dmp")
        assert "test_app!" in (await run(client, with_symbols, "kn"))["output"]
        other_stack = (await run(client, other, "kn"))["output"]

        cut(sym, 4096)
        failed = await run(client, with_symbols, "kn")
        assert failed["status"] == "failed", failed
        assert failed["error"]["code"] == "symbol_file_changed"
        assert "test_app.sym changed on disk while it was open" in failed["error"]["message"]
        assert (await run(client, other, "kn"))["output"] == other_stack
        # The symbols were dropped and read again from the cut file: no error now.
        again = await run(client, with_symbols, "kn")
        assert again["status"] == "succeeded" and "test_app!crash" not in again["output"]


@pytest.mark.skipif(os.name != "posix" or under_wine(), reason="FIFOs are a POSIX thing")
async def test_a_fifo_named_like_a_dump_blocks_no_tool(target: Target) -> None:
    folder = folder_in(target)
    shutil.copy(TESTDATA / "crashy-x64-null.dmp", folder / "good.dmp")
    fifo = folder / "blocked.dmp"
    os.mkfifo(fifo)
    refusal = "blocked.dmp is a named pipe (FIFO), not a regular file"
    async with target.connect() as client:
        e = err(await call(client, "open_dump", path=str(fifo)))
        assert e["code"] == "not_a_regular_file" and refusal in e["message"], e
        listing = ok(await call(client, "list_dumps", directory=str(folder)))
        errors = [d["error"]["message"] for d in listing["dumps"] if d.get("error")]
        assert len(listing["dumps"]) == 2 and len(errors) == 1 and refusal in errors[0], listing
        triage = ok(await call(client, "triage_dumps", directory=str(folder)))
        assert triage["dumps"] == 2 and refusal in triage["failed"][0]["error"], triage
        ok(await call(client, "list_sessions"))
