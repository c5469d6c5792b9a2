"""Handshake, tools/list and prompts, over stdio and HTTP, in both protocol versions."""

from __future__ import annotations

import json

import jsonschema
import pytest

from conftest import Target
from helpers import TEXT_TOOLS

pytestmark = pytest.mark.anyio

TOOLS = {
    "list_dumps",
    "triage_dumps",
    "open_dump",
    "analyze_crash",
    "run_command",
    "read_output",
    "list_sessions",
    "close_session",
    "attach",
    "break_in",
    "wait_for_event",
}


async def test_version_is_negotiated(target: Target) -> None:
    async with target.connect() as client:
        expected = "2025-11-25" if target.mode == "legacy" else "2026-07-28"
        assert client.protocol_version == expected
        if client.server_info is not None:
            assert client.server_info.name == "ntdbg"


async def test_tools_list_has_valid_schemas(target: Target) -> None:
    async with target.connect() as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == TOOLS
    for tool in tools:
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.input_schema["type"] == "object", tool.name
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} is not described"
        if tool.name in TEXT_TOOLS:
            # Their answer is text; the typed value comes only on request (format "json").
            assert tool.output_schema is None, tool.name
            assert "format" in tool.input_schema["properties"], tool.name
        else:
            assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        a = tool.annotations
        assert a is not None, tool.name
        for hint in (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint):
            assert isinstance(hint, bool), tool.name
    wire = json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools])
    assert len(wire) < 12_000, f"tools/list is {len(wire)} characters"


async def test_prompts(target: Target) -> None:
    async with target.connect() as client:
        names = {p.name for p in (await client.list_prompts()).prompts}
        assert {"triage-dump", "triage-kernel-dump"} <= names
        prompt = await client.get_prompt("triage-dump", {"path": "crash.dmp"})
    body = " ".join(getattr(m.content, "text", "") for m in prompt.messages)
    assert "open_dump" in body and "analyze_crash" in body and "crash.dmp" in body


async def test_an_ended_http_session_is_a_success(http_server, caplog: pytest.LogCaptureFixture) -> None:
    """The SDK ends its HTTP session with DELETE; the server answers a success it knows
    (204), so the client logs no failed termination."""
    target = Target("http", "legacy", None, http_server)  # type: ignore[arg-type]
    with caplog.at_level("WARNING"):
        async with target.connect() as client:
            await client.list_tools()
    assert not [r for r in caplog.records if "termination failed" in r.getMessage()], caplog.text
