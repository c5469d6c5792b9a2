"""What a model pays: no output delivered twice in one result, and every declared output schema
kept (ARCHITECTURE.md, "What a model receives")."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from conftest import SAMPLE, Target
from helpers import TEXT_TOOLS, text

pytestmark = pytest.mark.anyio

# Text lines shorter than this may well recur as a value (a session id of 26 characters, a
# module name): not output.
LINE = 32


def strings(value: Any):
    """Every string inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def repeated_lines(result) -> list[str]:
    """The text's lines that the structured content carries again, verbatim."""
    if result.structured_content is None:
        return []
    values = list(strings(result.structured_content))
    lines = {line.strip() for line in text(result).splitlines() if len(line.strip()) >= LINE}
    return sorted(line for line in lines if any(line in v for v in values))


async def test_no_result_repeats_its_text_and_schemas_hold(target: Target) -> None:
    async with target.connect() as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        seen: list[tuple[str, Any]] = []

        async def call(tool: str, **arguments: Any):
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, f"{tool}: {text(result)}"
            seen.append((tool, result))
            return result

        await call("list_dumps")
        opened = await call("open_dump", path=str(SAMPLE))
        sid = text(opened).splitlines()[0]
        await call("analyze_crash", session_id=sid)
        batch = await call("run_command", session_id=sid, command="kb; .frame 0; dv /t; ~*k")
        ids = [line.rsplit("[", 1)[1].rstrip("]") for line in text(batch).splitlines() if line.startswith("0:000> ")]
        assert len(ids) == 4, text(batch)
        page = await call("read_output", command_id=ids[3], offset=1, limit=5)
        assert "[from line 1 of " in text(page), text(page)
        await call("read_output", command_id=ids[0], grep="crashy!main")
        await call("list_sessions")
        await call("close_session", session_id=sid)

        for tool, result in seen:
            assert repeated_lines(result) == [], f"{tool} sends its text twice"
            if tool in TEXT_TOOLS:
                # Text is the answer: structured content only on request (format "json").
                assert result.structured_content is None, tool
                assert schemas[tool] is None, tool
            else:
                assert schemas[tool] is not None, tool
                jsonschema.validate(result.structured_content, schemas[tool])


async def test_format_json_adds_the_typed_value(target: Target) -> None:
    async with target.connect() as client:
        opened = await client.call_tool("open_dump", {"path": str(SAMPLE)})
        sid = opened.structured_content["session_id"]
        run = await client.call_tool("run_command", {"session_id": sid, "command": "k", "format": "json"})
        typed = run.structured_content["results"][0]
        assert typed["status"] == "succeeded" and typed["result"]["kind"] == "stack", typed
        report = await client.call_tool("analyze_crash", {"session_id": sid, "format": "json"})
        assert "crashy!write_null" in report.structured_content["signature"]
        page = await client.call_tool("read_output", {"command_id": typed["command_id"], "format": "json"})
        assert page.structured_content["next_offset"] is None
        await client.call_tool("close_session", {"session_id": sid})
