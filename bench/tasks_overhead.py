"""What a task costs: the same call made by a client without the Tasks extension and by one
that declares it (MCP 2026-07-28), over stdio, median of N calls each, from the official Python
SDK. A call that ends within 0.2 s is answered directly either way; a longer one becomes a task,
whose round trip is `tools/call` (answered with the task) and then `tasks/get` until it is
`completed`: "eager" reads it again at once (the protocol's cost), "polite" waits the server's
`pollIntervalMs` between reads, as a client should (what an agent sees). The work: `run_command
"k"` on the sample dump (about a millisecond: answered directly) and one memory search over the
shared corpus's largest dump (about a second in a debug build: a task).

usage: .ci/venv/bin/python bench/tasks_overhead.py [CALLS]   (default 10, at most 32: a server
       keeps 32 tasks per client; target/release/ntdbg, target/debug/ntdbg or $NTDBG_BIN)
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "mcp_client"))
from tasks_ext import CreatedTask, TasksExtension, get_task, result_of  # noqa: E402

SAMPLE = ROOT / "testdata" / "crashy-x64-null.dmp"
BIG_DUMP = (
    ROOT.parent / "shared" / "testdata" / "mozilla-minidump-stackwalk-pgo" / "pgo_data" / "minidumps" / "windows-aarch64.dmp"
)
SEARCH = 's -a 0 L?7fffffffffffffff "no such text anywhere"'
ARGS = ["mcp", "--offline", "--allow-dir", str(ROOT / "testdata"), "--allow-dir", str(BIG_DUMP.parent)]


def binary() -> Path:
    if env := os.environ.get("NTDBG_BIN"):
        return Path(env)
    for profile in ("release", "debug"):
        candidate = ROOT / "target" / profile / "ntdbg"
        if candidate.exists():
            return candidate
    sys.exit("no ntdbg binary: build it (cargo build -p ntdbg-cli) or set NTDBG_BIN")


async def eager(client: Client, tool: str, arguments: dict) -> bool:
    """Makes the call, reading its task (if it became one) at once until it ends; whether it
    became a task."""
    task = await client.session.call_tool(tool, arguments, allow_claimed=True)
    if not isinstance(task, CreatedTask):
        assert not task.is_error
        return False
    while task.status == "working":
        task = await get_task(client, task.task_id)
    assert not result_of(task).is_error
    return True


async def main(calls: int) -> None:
    """Each kind of client has its own server (each stdio client starts its own, so each has
    the server's 32 kept tasks to itself); their calls alternate, so load on the machine falls
    on all alike."""
    params = StdioServerParameters(command=str(binary()), args=ARGS, cwd=str(ROOT))
    work = {"run_command k": (SAMPLE, "k"), "one s search": (BIG_DUMP, SEARCH)}
    print(f"{binary()}, {calls} calls each, median ms")
    for label, (path, command) in work.items():
        async with (
            Client(params, mode="2026-07-28") as plain,
            Client(params, mode="2026-07-28", extensions=[TasksExtension()]) as eager_client,
            Client(params, mode="2026-07-28", extensions=[TasksExtension()]) as polite_client,
        ):
            sids = {}
            for client in (plain, eager_client, polite_client):
                opened = await client.call_tool("open_dump", {"path": str(path)})
                sids[id(client)] = opened.structured_content["session_id"]

            def arguments(client: Client) -> dict:
                return {"session_id": sids[id(client)], "command": command}

            async def direct(client: Client) -> None:
                # For polite_client, the SDK's claim (tasks_ext) waits pollIntervalMs between reads.
                assert not (await client.call_tool("run_command", arguments(client))).is_error

            tasks_made = []

            async def fast(client: Client) -> None:
                tasks_made.append(await eager(client, "run_command", arguments(client)))

            times: dict[str, list[float]] = {"plain": [], "eager": [], "polite": []}
            runs = (("plain", direct, plain), ("eager", fast, eager_client), ("polite", direct, polite_client))
            for _ in range(calls):
                for name, run, client in runs:
                    start = time.perf_counter()
                    await run(client)
                    times[name].append((time.perf_counter() - start) * 1000)
            base, quick, polite = (statistics.median(times[k]) for k in ("plain", "eager", "polite"))
            print(
                f"{label:14} plain {base:7.1f}  with tasks: eager {quick:7.1f} ({quick / base:.2f}x)"
                f"  polite {polite:7.1f} ({polite / base:.2f}x)  became tasks: {sum(tasks_made)}/{calls}"
            )


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 10)
