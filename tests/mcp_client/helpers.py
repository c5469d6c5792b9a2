"""Small assertions shared by the MCP client tests."""

from __future__ import annotations

from typing import Any

from mcp import Client


# Tools whose answer is text: they send structured content only with format "json", which
# these tests read (test_tokens.py checks the default, text-only answers).
TEXT_TOOLS = {"run_command", "read_output", "analyze_crash", "list_dumps", "triage_dumps"}


async def call(client: Client, tool: str, **arguments: Any):
    if tool in TEXT_TOOLS:
        arguments.setdefault("format", "json")
    return await client.call_tool(tool, arguments)


def ok(result) -> dict[str, Any]:
    assert not result.is_error, f"tool failed: {text(result)}"
    assert isinstance(result.structured_content, dict), "structuredContent must be an object"
    return result.structured_content


def ran(result) -> dict[str, Any]:
    """A run_command batch's structured result, whose isError says whether a command failed or
    ran out of time (the per-command results are there either way)."""
    content = result.structured_content
    assert isinstance(content, dict), f"no structured content: {text(result)}"
    failed = any(r["status"] in ("failed", "timed_out") for r in content["results"])
    assert bool(result.is_error) == failed, f"isError {result.is_error} with results {content['results']}"
    return content


def err(result) -> dict[str, Any]:
    assert result.is_error, f"expected an error, got {result.structured_content}"
    e = result.structured_content
    assert isinstance(e, dict), "errors carry structured content"
    assert set(e) >= {"code", "message", "hint", "recoverable"}, e
    assert isinstance(e["recoverable"], bool)
    return e


def text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def open_dump(client: Client, path) -> str:
    return ok(await call(client, "open_dump", path=str(path)))["session_id"]


def file_name(path: str) -> str:
    """The last component of a path the server reported, Windows (`\\`) or POSIX spelled."""
    return path.replace("\\", "/").rsplit("/", 1)[-1]
