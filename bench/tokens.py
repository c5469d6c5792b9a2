"""Token cost for agents: what a model receives from ntdbg over MCP.

Reports, for the default profile and both drop-in profiles, the size of `tools/list` (compact
JSON as the server sends it) in characters and in tokens, split into descriptions, input schemas
and output schemas; then runs one fixed investigation of the shipped sample over stdio and counts,
per call, the characters of the text content, of the structured content, and of what each kind
of client hands the model (see ARCHITECTURE.md, "What a model receives"):

- text:       the text content only (OpenAI Agents SDK by default, LangChain MCP adapters);
- structured: `structuredContent` alone when the result has one, else the text (Claude Code,
              OpenCode, Codex CLI);
- both:       text and structured content (GitHub Copilot CLI and JetBrains, per their issues).

Tokens are counted with OpenAI's `o200k_base` BPE (the `bpe-openai` package from PyPI, which
embeds its vocabulary): a proxy, since every model family tokenizes differently.

usage: python bench/tokens.py [--json]   (needs `mcp` and `bpe-openai` in the interpreter;
       target/release/ntdbg, target/debug/ntdbg or $NTDBG_BIN)
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import anyio
import bpe_openai
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "testdata"
SAMPLE = SAMPLES / "crashy-x64-null.dmp"
ENCODING = bpe_openai.get_encoding("o200k_base")

# The fixed investigation: what an engineer does after opening a dump. Commands the build does
# not know yet fail and are counted as they answer (an error costs characters too).
INVESTIGATION = [
    ("open_dump", {"path": str(SAMPLE)}),
    ("analyze_crash", {}),
    ("run_command", {"command": "kb"}),
    ("run_command", {"command": ".frame 0; dv /t"}),
    ("run_command", {"command": "!address @rsp"}),
    ("run_command", {"command": "~*k"}),
    ("read_output", {"offset": 1, "limit": 2000}),
    ("close_session", {}),
]


def binary() -> Path:
    if env := os.environ.get("NTDBG_BIN"):
        return Path(env)
    for profile in ("release", "debug"):
        candidate = ROOT / "target" / profile / "ntdbg"
        if candidate.exists():
            return candidate
    sys.exit("no ntdbg binary: build it (cargo build --release -p ntdbg-cli) or set NTDBG_BIN")


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tokens(text: str) -> int:
    return len(ENCODING.encode(text))


def server(profile_args: list[str]) -> StdioServerParameters:
    args = ["mcp", "--offline", "--allow-dir", str(SAMPLES), *profile_args]
    return StdioServerParameters(command=str(binary()), args=args, cwd=str(ROOT))


async def tools_list_cost(profile_args: list[str]) -> dict:
    async with Client(server(profile_args)) as client:
        listed = await client.list_tools()
    tools = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]
    whole = compact({"tools": tools})
    return {
        "tools": len(tools),
        "chars": len(whole),
        "tokens": tokens(whole),
        "descriptions": sum(len(t.get("description", "")) for t in tools),
        "input_schemas": sum(len(compact(t.get("inputSchema", {}))) for t in tools),
        "output_schemas": sum(len(compact(t["outputSchema"])) for t in tools if "outputSchema" in t),
    }


# A command's output id as run_command's text heads each output with it.
COMMAND_ID = re.compile(r"^\S+> .*  \[(c[0-9a-f]+-[0-9a-f]+)\]$", re.M)


def received(result) -> dict:
    text = "".join(getattr(c, "text", "") for c in result.content)
    structured = compact(result.structured_content) if result.structured_content is not None else ""
    only = structured or text
    return {
        "text_chars": len(text),
        "structured_chars": len(structured),
        "only_chars": len(only),
        "both_chars": len(text) + len(structured),
        "text_tokens": tokens(text),
        "only_tokens": tokens(only),
        "both_tokens": tokens(text) + tokens(structured),
        "is_error": bool(result.is_error),
    }


async def investigation_cost() -> list[dict]:
    rows = []
    async with Client(server([])) as client:
        session_id = None
        command_id = None
        for tool, args in INVESTIGATION:
            call = dict(args)
            if tool in ("analyze_crash", "run_command", "close_session"):
                call["session_id"] = session_id
            if tool == "read_output":
                call["command_id"] = command_id
            result = await client.call_tool(tool, call)
            sc = result.structured_content or {}
            if tool == "open_dump":
                session_id = sc.get("session_id")
            for item in sc.get("results", []) if isinstance(sc, dict) else []:
                command_id = item.get("command_id") or command_id
            text = "".join(getattr(c, "text", "") for c in result.content)
            for found in COMMAND_ID.findall(text) if tool == "run_command" else []:
                command_id = found
            label = tool if tool != "run_command" else f"run_command {args['command']}"
            rows.append({"call": label, **received(result)})
    return rows


async def main() -> None:
    profiles = {
        "default": [],
        "mcp-windbg": ["--profile", "mcp-windbg"],
        "windbg-mcp": ["--profile", "windbg-mcp", "--dump", str(SAMPLE)],
    }
    report = {"tools_list": {}, "investigation": await investigation_cost()}
    for name, args in profiles.items():
        report["tools_list"][name] = await tools_list_cost(args)
    keys = ("text_chars", "only_chars", "both_chars", "text_tokens", "only_tokens", "both_tokens")
    totals = {k: sum(r[k] for r in report["investigation"]) for k in keys}
    report["investigation_total"] = totals
    if "--json" in sys.argv:
        print(json.dumps(report, indent=2))
        return
    print("tools/list (compact JSON)")
    print(f"  {'profile':<12} {'tools':>5} {'chars':>7} {'tokens':>7} {'descr':>6} {'input':>6} {'output':>7}")
    for name, row in report["tools_list"].items():
        print(f"  {name:<12} {row['tools']:>5} {row['chars']:>7} {row['tokens']:>7} {row['descriptions']:>6} {row['input_schemas']:>6} {row['output_schemas']:>7}")
    print("fixed investigation of testdata/crashy-x64-null.dmp (characters the model receives)")
    print("  text: text-only clients; struct: the structured content; only: structured-when-present")
    print("  clients (structured content, else text); both: clients that forward both")
    head = f"  {'call':<30} {'text':>6} {'struct':>7} {'only':>6} {'both':>6}"
    print(f"{head} {'tok(text)':>9} {'tok(only)':>9} {'tok(both)':>9}")
    for row in report["investigation"]:
        mark = " (error)" if row["is_error"] else ""
        line = f"  {row['call'][:30]:<30} {row['text_chars']:>6} {row['structured_chars']:>7} {row['only_chars']:>6} {row['both_chars']:>6}"
        print(f"{line} {row['text_tokens']:>9} {row['only_tokens']:>9} {row['both_tokens']:>9}{mark}")
    t = totals
    line = f"  {'total':<30} {t['text_chars']:>6} {'':>7} {t['only_chars']:>6} {t['both_chars']:>6}"
    print(f"{line} {t['text_tokens']:>9} {t['only_tokens']:>9} {t['both_tokens']:>9}")

if __name__ == "__main__":
    anyio.run(main)
