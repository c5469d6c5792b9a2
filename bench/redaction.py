"""What `ntdbg mcp --redact` costs: characters of `tools/list` and of a typical investigation
(open_dump, analyze_crash, one run_command batch) with and without it, and the time per call
(a loop of run_command and analyze_crash calls, as a ratio of the means). Run on the planted
dump (testdata/personal/planted.dmp: much to redact) and on crashy-x64-null.dmp (nothing).

usage: python bench/redaction.py [LOOPS]   (needs `mcp` in the interpreter; target/release/ntdbg,
       target/debug/ntdbg or $NTDBG_BIN)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tool_sets import ROOT, binary  # noqa: E402

DUMPS = {"planted": ROOT / "testdata" / "personal" / "planted.dmp", "null": ROOT / "testdata" / "crashy-x64-null.dmp"}
BATCH = "lm; lmv m personal; lmv m crashy; da @rcx; du @rdx; du @rdx+0x38; kn; dps @rsp L8; r; !analyze -v"


def size(result) -> int:
    text = "".join(getattr(c, "text", "") for c in result.content)
    structured = result.structured_content
    return len(text) + (len(json.dumps(structured, separators=(",", ":"))) if structured is not None else 0)


async def measure(dump: Path, redact: bool, loops: int) -> dict:
    args = ["mcp", "--offline", "--allow-dir", str(ROOT / "testdata"), *(["--redact"] if redact else [])]
    params = StdioServerParameters(command=str(binary()), args=args, cwd=str(ROOT))
    async with Client(params) as client:
        tools = await client.list_tools()
        listed = len(json.dumps([t.model_dump(mode="json", exclude_none=True) for t in tools.tools], separators=(",", ":")))
        opened = await client.call_tool("open_dump", {"path": str(dump)})
        session = opened.structured_content["session_id"]
        analyzed = await client.call_tool("analyze_crash", {"session_id": session})
        batch = await client.call_tool("run_command", {"session_id": session, "command": BATCH})
        investigation = size(opened) + size(analyzed) + size(batch)
        timings = {}
        for tool, arguments in [
            ("run_command", {"session_id": session, "command": BATCH}),
            ("analyze_crash", {"session_id": session}),
        ]:
            started = time.perf_counter()
            for _ in range(loops):
                await client.call_tool(tool, arguments)
            timings[tool] = (time.perf_counter() - started) / loops
        return {"tools_list": listed, "investigation": investigation, "seconds": timings}


async def main() -> None:
    loops = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    print(f"binary: {binary()}, {loops} calls per tool")
    for name, dump in DUMPS.items():
        plain = await measure(dump, False, loops)
        redacted = await measure(dump, True, loops)
        print(
            f"{name}: tools/list {plain['tools_list']} -> {redacted['tools_list']} chars; "
            f"investigation {plain['investigation']} -> {redacted['investigation']} chars"
        )
        for tool, seconds in plain["seconds"].items():
            after = redacted["seconds"][tool]
            print(f"  {tool}: {seconds * 1000:.1f} ms -> {after * 1000:.1f} ms per call (x{after / seconds:.2f})")


if __name__ == "__main__":
    anyio.run(main)
