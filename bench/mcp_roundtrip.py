"""MCP round trip: `run_command "r"` over stdio and streamable HTTP, p50/p99 of N calls each,
measured from the official Python SDK client, beside two peers on the same connection: the
protocol's `ping` and `tools/list` (no engine work), so the ratio shows what the engine adds.

usage: .ci/venv/bin/python bench/mcp_roundtrip.py [CALLS]   (default 1000; needs
       target/release/ntdbg, or NTDBG_BIN)
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "testdata" / "crashy-x64-null.dmp"
BIN = Path(os.environ.get("NTDBG_BIN", ROOT / "target" / "release" / "ntdbg"))
ARGS = ["mcp", "--offline", "--allow-dir", str(ROOT / "testdata")]
# `ping` exists in the initialize lifecycle only, so the client runs in legacy mode.
warnings.filterwarnings("ignore", message="ping is removed")


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def timed(calls: int, op) -> list[float]:
    for _ in range(min(50, calls)):  # warm up
        await op()
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        await op()
        out.append((time.perf_counter() - start) * 1000)
    return out


async def measure(source, calls: int) -> dict[str, list[float]]:
    async with Client(source, mode="legacy") as client:
        opened = await client.call_tool("open_dump", {"path": str(SAMPLE)})
        sid = opened.structured_content["session_id"]

        async def run_r() -> None:
            result = await client.call_tool("run_command", {"session_id": sid, "command": "r"})
            assert not result.is_error and result.structured_content["results"][0]["status"] == "succeeded"

        return {
            'run_command "r"': await timed(calls, run_r),
            "ping": await timed(calls, client.send_ping),
            "tools/list": await timed(calls, client.list_tools),
        }


def start_http() -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [str(BIN), *ARGS, "--http", "127.0.0.1:0"], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    for line in process.stderr:
        if m := re.search(r"listening on (http://\S+/mcp)", line):
            return process, m.group(1)
    raise RuntimeError("the HTTP server did not start")


async def main(calls: int) -> None:
    if not BIN.exists():
        sys.exit(f"no {BIN}: cargo build --release -p ntdbg-cli (or set NTDBG_BIN)")
    results = {"stdio": await measure(StdioServerParameters(command=str(BIN), args=ARGS), calls)}
    process, url = start_http()
    try:
        results["http"] = await measure(url, calls)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
    print(f"{calls} calls each, one client, sequential; milliseconds\n")
    print("| transport | call | p50 ms | p99 ms | mean ms | p50 ratio to ping |")
    print("|---|---|---|---|---|---|")
    for transport, by_call in results.items():
        ping = statistics.median(by_call["ping"])
        for name, samples in by_call.items():
            p50 = statistics.median(samples)
            print(
                f"| {transport} | {name} | {p50:.3f} | {percentile(samples, 99):.3f} | "
                f"{statistics.fmean(samples):.3f} | {p50 / ping:.2f} |"
            )


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
