"""Answers that stay within what MCP clients accept: the official SDK reads at most 1 MiB per
server-sent event over HTTP, so a `format: "json"` batch whose typed results would pass the
server's answer budget (768 KiB) leaves the later ones out, with a note in their output, and the
call still succeeds, over stdio and HTTP.

The large answer is `~*k` on the shared corpus's Firefox dump (104 threads, about 2 MB of stack
JSON).
"""

from __future__ import annotations

import json

import pytest

from conftest import Target
from helpers import call, ok, ran
from test_profiles import shared_testdata
from test_progress_cancel import corpus, corpus_http  # noqa: F401 (fixtures)

pytestmark = pytest.mark.anyio

FIREFOX = shared_testdata() / "mozilla-minidump-stackwalk-pgo" / "pgo_data" / "minidumps" / "windows-x86_64.dmp"
ANSWER_LIMIT = 1 << 20


async def test_a_large_typed_result_is_left_out_and_the_answer_arrives(corpus: Target) -> None:
    async with corpus.connect() as client:
        sid = ok(await call(client, "open_dump", path=str(FIREFOX)))["session_id"]
        answer = await call(client, "run_command", session_id=sid, command="lm; ~*k; r", format="json")
        run = ran(answer)
        size = len(json.dumps(answer.structured_content)) + sum(len(c.text) for c in answer.content if c.type == "text")
        assert size < ANSWER_LIMIT, size
        lm, stacks, registers = run["results"]
        assert [r["status"] for r in run["results"]] == ["succeeded"] * 3
        assert lm["result"]["kind"] == "modules"
        assert stacks["result"] is None
        assert "[typed result left out: with this answer's others its JSON passes" in stacks["output"]
        # A small result after the one left out still fits.
        assert registers["result"] is not None
        ok(await call(client, "close_session", session_id=sid))
