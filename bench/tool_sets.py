"""`tools/list` size per profile and tool set (`ntdbg mcp --profile P --tools dumps|live|all`):
characters of the compact JSON the server sends, and the tools listed.

usage: python bench/tool_sets.py [--json]   (needs `mcp` in the interpreter; target/release/ntdbg,
       target/debug/ntdbg or $NTDBG_BIN)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "testdata"
SAMPLE = SAMPLES / "crashy-x64-null.dmp"
PROFILES = {
    "ntdbg": [],
    "mcp-windbg": ["--profile", "mcp-windbg"],
    "windbg-mcp": ["--profile", "windbg-mcp", "--dump", str(SAMPLE)],
    "ntoseye": ["--profile", "ntoseye"],
    "chensiling": ["--profile", "chensiling", "--stdio", "--dump", str(SAMPLE)],
}
SETS = ("dumps", "live", "all")


def binary() -> Path:
    if env := os.environ.get("NTDBG_BIN"):
        return Path(env)
    for profile in ("release", "debug"):
        candidate = ROOT / "target" / profile / "ntdbg"
        if candidate.exists():
            return candidate
    sys.exit("no ntdbg binary: build it (cargo build -p ntdbg-cli) or set NTDBG_BIN")


async def size(args: list[str]) -> dict:
    params = StdioServerParameters(
        command=str(binary()), args=["mcp", "--offline", "--allow-dir", str(SAMPLES), *args], cwd=str(ROOT)
    )
    async with Client(params) as client:
        listed = await client.list_tools()
    tools = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]
    whole = json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False)
    return {"tools": len(tools), "chars": len(whole), "names": sorted(t["name"] for t in tools)}


async def main() -> None:
    report = {
        profile: {chosen: await size([*args, "--tools", chosen]) for chosen in SETS}
        for profile, args in PROFILES.items()
    }
    if "--json" in sys.argv:
        print(json.dumps(report, indent=2))
        return
    print("tools/list, characters of compact JSON (tools listed)")
    print(f"  {'profile':<12}" + "".join(f" {s:>13}" for s in SETS))
    for profile, row in report.items():
        cells = "".join(f" {row[s]['chars']:>8} ({row[s]['tools']:>2})" for s in SETS)
        print(f"  {profile:<12}{cells}")


if __name__ == "__main__":
    anyio.run(main)
