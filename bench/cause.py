"""How many calls and characters an agent spends to reach the cause of each repository sample.

For every dump under testdata/ it first asks the server for the full report (`analyze_crash`
with format "json", on a connection of its own) and takes the report's cause: its first
inference, text and basis. A sample whose report states no inference has no cause to reach and
is listed as such. Then it plays the agent the tool descriptions ask for, on a fresh connection:

  1. open_dump(path): done when the answer carries the cause's text and its basis;
  2. otherwise analyze_crash(session_id), the full report: done when it carries them.

and counts, per sample, the calls and the characters the model received up to the cause, in
the two views clients give a model (ARCHITECTURE.md, "What a model receives"):

- text:   the text content (text-only clients);
- only:   the structured content when the result has one, else the text (Claude Code, Codex).

A cause counts as reached in a view only when that view carries both the text and the basis
(whitespace-insensitive). Run it before and after a change to the first triage.

usage: python bench/cause.py [--json]   (needs `mcp` in the interpreter; target/release/ntdbg,
       target/debug/ntdbg or $NTDBG_BIN)
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "testdata"
# The investigation's calls, in the order an agent makes them.
STEPS = ("open_dump", "analyze_crash")


def binary() -> Path:
    if env := os.environ.get("NTDBG_BIN"):
        return Path(env)
    for profile in ("release", "debug"):
        candidate = ROOT / "target" / profile / "ntdbg"
        if candidate.exists():
            return candidate
    sys.exit("no ntdbg binary: build it (cargo build -p ntdbg-cli) or set NTDBG_BIN")


def server() -> StdioServerParameters:
    args = ["mcp", "--offline", "--allow-dir", str(SAMPLES)]
    return StdioServerParameters(command=str(binary()), args=args, cwd=str(ROOT))


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def squeeze(text: str) -> str:
    """Text with every run of whitespace as one space (JSON escapes resolved by the caller)."""
    return re.sub(r"\s+", " ", text).strip()


def views(result) -> dict[str, str]:
    """What a text-only client and a structured-first client hand the model."""
    text = "".join(getattr(c, "text", "") for c in result.content)
    structured = result.structured_content
    only = compact(structured) if structured is not None else text
    # Structured content is searched in its decoded strings, as a model reads them.
    only_plain = " ".join(strings(structured)) if structured is not None else text
    return {"text": text, "only": only, "only_plain": only_plain}


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def carries(haystack: str, cause: dict) -> bool:
    plain = squeeze(haystack)
    return squeeze(cause["text"]) in plain and squeeze(cause["basis"]) in plain


async def cause_of(client: Client, dump: Path) -> dict | None:
    opened = await client.call_tool("open_dump", {"path": str(dump), "new_session": True})
    if opened.is_error:
        return None
    session = opened.structured_content["session_id"]
    report = await client.call_tool("analyze_crash", {"session_id": session, "format": "json"})
    await client.call_tool("close_session", {"session_id": session})
    inferences = (report.structured_content or {}).get("inferences") or []
    return inferences[0] if inferences else None


async def investigate(dump: Path, cause: dict) -> dict:
    """The agent's calls on a fresh connection, until each view carries the cause."""
    row: dict = {"text": None, "only": None}
    chars = {"text": 0, "only": 0}
    async with Client(server()) as client:
        session = None
        for calls, tool in enumerate(STEPS, start=1):
            args = {"path": str(dump)} if tool == "open_dump" else {"session_id": session}
            result = await client.call_tool(tool, args)
            if tool == "open_dump":
                session = (result.structured_content or {}).get("session_id")
                row["open_dump_text_chars"] = len(views(result)["text"])
            seen = views(result)
            for view in ("text", "only"):
                if row[view] is not None:
                    continue
                chars[view] += len(seen[view])
                plain = seen["only_plain"] if view == "only" else seen["text"]
                if carries(plain, cause):
                    row[view] = {"calls": calls, "chars": chars[view]}
            if row["text"] is not None and row["only"] is not None:
                break
    return row


async def main() -> None:
    dumps = sorted(SAMPLES.rglob("*.dmp"))
    rows = []
    async with Client(server()) as client:
        causes = {d: await cause_of(client, d) for d in dumps}
    for dump in dumps:
        name = str(dump.relative_to(SAMPLES))
        cause = causes[dump]
        if cause is None:
            rows.append({"sample": name, "cause": None})
            continue
        rows.append({"sample": name, "cause": cause["text"], **await investigate(dump, cause)})
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=2))
        return
    print("calls and characters to reach the report's cause (its first inference, text and basis)")
    print("  text: text-only clients; only: structured content when present, else text")
    print(f"  {'sample':<36} {'calls':>5} {'chars':>6} {'calls':>5} {'chars':>6} {'open_dump':>9}")
    print(f"  {'':<36} {'(text)':>5} {'(text)':>6} {'(only)':>5} {'(only)':>6} {'text':>9}")
    totals = {"text": [0, 0], "only": [0, 0]}
    for row in rows:
        if row["cause"] is None:
            print(f"  {row['sample']:<36} {'(the report states no cause)':>36}")
            continue
        cells = []
        for view in ("text", "only"):
            got = row[view]
            if got is None:
                cells.append(f"{'-':>5} {'-':>6}")
                continue
            totals[view][0] += got["calls"]
            totals[view][1] += got["chars"]
            cells.append(f"{got['calls']:>5} {got['chars']:>6}")
        print(f"  {row['sample']:<36} {' '.join(cells)} {row['open_dump_text_chars']:>9}")
    stated = [r for r in rows if r["cause"] is not None]
    one_call = sum(1 for r in stated if r["text"] and r["text"]["calls"] == 1 and r["only"] and r["only"]["calls"] == 1)
    print(f"  {'total':<36} {totals['text'][0]:>5} {totals['text'][1]:>6} {totals['only'][0]:>5} {totals['only'][1]:>6}")
    print(f"  {one_call} of {len(stated)} samples with a stated cause reach it in one call ({len(rows)} samples)")


if __name__ == "__main__":
    anyio.run(main)
