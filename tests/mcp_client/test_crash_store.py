"""`ntdbg mcp --db`: the read-only `query_crashes` tool on a crash database built with
`ntdbg ingest`, listed only when the server has a database; its dumps open with open_dump."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from conftest import SAMPLE, Target, mcp_args, ntdbg_command
from helpers import call, err, ok, text

pytestmark = pytest.mark.anyio

# What the tool adds to tools/list (test_protocol.py checks the whole budget without it).
TOOL_BUDGET = 1_000


@pytest.fixture(scope="module")
def crash_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("store") / "crashes.db"
    subprocess.run([*ntdbg_command(), "ingest", str(SAMPLE), "--db", str(db), "--offline"], check=True, capture_output=True, timeout=300)
    return db


def store_target(scratch: Path, db: Path) -> Target:
    return Target("stdio", "legacy", scratch, None, [*mcp_args(scratch), "--db", str(db)])


async def test_query_crashes_is_listed_small_and_answers(scratch: Path, crash_db: Path) -> None:
    async with store_target(scratch, crash_db).connect() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        tool = tools["query_crashes"]
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.annotations.read_only_hint is True
        wire = json.dumps(tool.model_dump(by_alias=True, exclude_none=True, mode="json"))
        assert len(wire) < TOOL_BUDGET, f"query_crashes adds {len(wire)} characters"

        plain = await client.call_tool("query_crashes", {})
        assert not plain.is_error and plain.structured_content is None
        assert "1 dump(s): 1 bucket(s), 0 failed" in text(plain)

        typed = ok(await client.call_tool("query_crashes", {"format": "json"}))
        assert typed["dumps"] == 1 and typed["buckets"][0]["count"] == 1
        member = typed["buckets"][0]["dumps"][0]
        assert Path(member) == SAMPLE.resolve()
        assert typed["buckets"][0]["representative"]["signature"] == typed["buckets"][0]["signature"]
        opened = ok(await call(client, "open_dump", path=member))
        assert opened["session_id"]

        versions = ok(await client.call_tool("query_crashes", {"module": "crashy.exe", "format": "json"}))
        assert versions["module"] == "crashy.exe" and versions["versions"][0]["dumps"] == 1

        bad = err(await client.call_tool("query_crashes", {"since": "last tuesday"}))
        assert bad["code"] == "invalid_argument"


async def test_query_crashes_needs_a_database(scratch: Path) -> None:
    target = Target("stdio", "legacy", scratch, None, mcp_args(scratch))
    async with target.connect() as client:
        assert "query_crashes" not in {t.name for t in (await client.list_tools()).tools}
