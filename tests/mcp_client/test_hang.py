"""Hangs and deadlocks through MCP: `!locks` and `!waits` in run_command, the wait section of
analyze_crash, on the repository's deadlock sample (tools/crashgen/samples/hang.c)."""

from __future__ import annotations

import pytest

from conftest import TESTDATA, Target
from helpers import call, ok

pytestmark = pytest.mark.anyio

DEADLOCK = TESTDATA / "hang" / "deadlock.dmp"


async def test_locks_and_waits_on_the_deadlock_sample(target: Target) -> None:
    async with target.connect() as client:
        opened = ok(await call(client, "open_dump", path=str(DEADLOCK), symbols_path=str(DEADLOCK.parent)))
        sid = opened["session_id"]
        assert opened["event"]["type"] == "none"

        run = ok(await call(client, "run_command", session_id=sid, command="!locks; !waits", format="json"))
        assert [r["status"] for r in run["results"]] == ["succeeded", "succeeded"]
        locks = run["results"][0]
        assert "CritSec +11fbe8 at 000000000011fbe8" in locks["output"]
        assert "*** Locked" in locks["output"]
        sections = locks["result"]["sections"]
        assert [(s["address"], s["owning_thread"], s["locked"]) for s in sections] == [
            ("0x000000000011fbe8", "0xec", True),
            ("0x000000000011fc10", "0xf0", True),
        ]
        # Without ntdll's image the waiters are not identified: the sections come from the
        # captured stacks, and each says so.
        assert {s["found_by"] for s in sections} == {"stack_scan"}
        assert "the process-wide list was not walked" in locks["result"]["note"]
        waits = run["results"][1]["result"]
        assert waits["kind"] == "waits"
        assert [w["thread_id"] for w in waits["threads"]] == ["0x24", "0xec", "0xf0"]
        assert waits["deadlocks"] == []

        report = ok(await call(client, "analyze_crash", session_id=sid))
        assert report["event"]["type"] == "none"
        assert [w["thread_id"] for w in report["waits"]] == ["0x24", "0xec", "0xf0"]
        assert any(i["text"].startswith("contention: critical section 0x11fbe8 is held by thread 0xec") for i in report["inferences"])
        assert "!locks" in report["next_commands"]
