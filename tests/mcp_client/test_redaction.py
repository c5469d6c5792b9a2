"""`ntdbg mcp --redact`: personal data planted in a dump made by tools/crashgen
(samples/personal.c: a user name in the exe's path, an environment block of planted values and
a note on the stack) reaches the client without --redact and never with it, in every profile,
over stdio and streamable HTTP, in text and in structured results; addresses and symbols come
out unchanged, each redacted result counts its replacements in its trailer, and --transcript
records every call, redacted, in a file only its owner may read.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from conftest import MODES, TESTDATA, HttpServer, Target, mcp_args, start_http

pytestmark = pytest.mark.anyio

DUMP = TESTDATA / "personal" / "planted.dmp"

# What samples/personal.c planted: none of it may reach a client under --redact.
PLANTED = [
    "zquistberg",
    "ZQ-LAPTOP-7731",
    "zoe.quistberg@example.org",
    "192.0.2.147",
    "2001:db8:85a3::8a2e:370:7334",
    "Zq7XkP2mW9vR4tY8uB3nC6hJ1sD5fG0a",
    "Tr0ub4dor-3-planted",
    "plans.docx",  # hidden by the rules file of these tests, not by a built-in rule
]

# The child's environment block as Wine gave it (personal.c's planted_environment, with
# SystemRoot moved to the end among Wine's own), copied onto its stack at the address in rdx:
# one `du` per string shows them all.
ENVIRONMENT = [
    "COMPUTERNAME=ZQ-LAPTOP-7731",
    "CONTACT_EMAIL=zoe.quistberg@example.org",
    "LICENSE_SERVER=192.0.2.147",
    "LICENSE_SERVER6=2001:db8:85a3::8a2e:370:7334",
    "PATH=C:\\windows\\system32;C:\\windows",
    "SERVICE_API_TOKEN=Zq7XkP2mW9vR4tY8uB3nC6hJ1sD5fG0a",
    "USERDOMAIN=ZQ-LAPTOP-7731",
    "USERNAME=zquistberg",
    "USERPROFILE=C:\\Users\\zquistberg",
]


def environment_commands() -> list[str]:
    commands, offset = [], 0
    for string in ENVIRONMENT:
        commands.append(f"du @rdx+{offset:#x}")
        offset += 2 * (len(string) + 1)
    return commands


COMMANDS = ["lm", "lmv m personal", "da @rcx", *environment_commands(), "kn", "dps @rsp L8", "r", "!analyze -v"]

# What must come out of a redacted run exactly as it did unredacted.
ADDRESS = re.compile(r"\b[0-9a-f]{8}`[0-9a-f]{8}\b|\b0x[0-9a-f]+\b", re.IGNORECASE)
SYMBOL = re.compile(r"\b[A-Za-z_][\w.]*![\w:~<>$@?]+(?:\+0x[0-9a-f]+)?")
TRAILER = re.compile(r"\[redacted (\d+): ([a-z]+ \d+(?:, [a-z]+ \d+)*)\]")


@dataclass
class Answer:
    """One call's answer as the client saw it: text, structured content, or the error."""

    text: str
    structured: str
    meta: dict | None

    @property
    def everything(self) -> str:
        return self.text + "\n" + self.structured


async def answer(client: Client, tool: str, arguments: dict) -> Answer:
    try:
        result = await client.call_tool(tool, arguments)
    except MCPError as e:  # ntoseye refuses with JSON-RPC errors
        return Answer(e.error.message, json.dumps(e.error.data), None)
    text = "".join(getattr(c, "text", "") for c in result.content)
    return Answer(text, json.dumps(result.structured_content), getattr(result, "meta", None))


Investigation = Callable[[Client], Awaitable[list[Answer]]]


async def ntdbg(client: Client) -> list[Answer]:
    opened = await answer(client, "open_dump", {"path": str(DUMP)})
    session = json.loads(opened.structured)["session_id"]
    answers = [opened, await answer(client, "analyze_crash", {"session_id": session, "format": "json"})]
    batch = {"session_id": session, "command": "\n".join(COMMANDS), "format": "json", "on_error": "continue"}
    answers.append(await answer(client, "run_command", batch))
    answers.append(await answer(client, "list_sessions", {}))
    answers.append(await answer(client, "close_session", {"session_id": session}))
    return answers


async def mcp_windbg(client: Client) -> list[Answer]:
    opened = await answer(client, "open_cdb_dump", {"dump_path": str(DUMP), "include_stack_trace": True})
    session = opened.text.splitlines()[0].removeprefix("session_id: ")
    answers = [opened]
    for command in COMMANDS:
        answers.append(await answer(client, "run_cdb_command", {"session_id": session, "command": command}))
    answers.append(await answer(client, "close_cdb_session", {"session_id": session}))
    return answers


async def windbg_mcp(client: Client) -> list[Answer]:
    answers = [await answer(client, "wm_session", {}), await answer(client, "wm_analyze_crash", {})]
    for command in COMMANDS:
        answers.append(await answer(client, "wm_run_cmd", {"cmd": command}))
    return answers


async def ntoseye(client: Client) -> list[Answer]:
    answers = [await answer(client, "open", {"backend": "dump", "connect": str(DUMP)})]
    for command in COMMANDS:
        answers.append(await answer(client, "command", {"line": command, "format": "json"}))
    answers.append(await answer(client, "close", {}))
    return answers


async def chensiling(client: Client) -> list[Answer]:
    answers = [
        await answer(client, "windbg_context", {}),
        await answer(client, "windbg_analyze", {"scope": "crash"}),
        await answer(client, "windbg_backtrace", {}),
        await answer(client, "windbg_module", {"module": "personal"}),
        await answer(client, "windbg_read_memory", {"address": "@rcx", "size": "0x40", "format": "q"}),
    ]
    for command in COMMANDS:
        answers.append(await answer(client, "windbg_exec", {"command": command}))
    return answers


# profile: (extra server arguments, the investigation)
PROFILES: dict[str, tuple[list[str], Investigation]] = {
    "ntdbg": ([], ntdbg),
    "mcp-windbg": (["--profile", "mcp-windbg"], mcp_windbg),
    "windbg-mcp": (["--profile", "windbg-mcp", "--dump", str(DUMP)], windbg_mcp),
    "ntoseye": (["--profile", "ntoseye"], ntoseye),
    "chensiling": (["--profile", "chensiling", "--dump", str(DUMP)], chensiling),
}


async def investigate(
    transport: str, mode: str, scratch: Path, profile: str, privacy: list[str]
) -> list[Answer]:
    """Runs `profile`'s investigation on a fresh server started with `privacy` options, over
    `transport` in protocol `mode`."""
    extra, run = PROFILES[profile]
    args = [*mcp_args(scratch), *extra, *privacy]
    if profile == "chensiling":
        args.append("--stdio" if transport == "stdio" else "--http-port=0")
    http: HttpServer | None = None
    if transport == "http":
        http = start_http(args if profile == "chensiling" else [*args, "--http", "127.0.0.1:0"])
    try:
        async with Target(transport, mode, scratch, http, args).connect() as client:
            return await run(client)
    finally:
        if http is not None:
            http.stop()


def found(answers: list[Answer], needle: str) -> list[str]:
    """The answers (shortened) that hold `needle`, in any case."""
    return [a.everything[:200] for a in answers if needle.lower() in a.everything.lower()]


@pytest.mark.parametrize("profile", list(PROFILES))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_planted_personal_data_never_reaches_the_client(
    transport: str, mode: str, profile: str, scratch: Path, tmp_path: Path
) -> None:
    rules = tmp_path / "rules.txt"
    rules.write_text("# the planted document's name\n(?i)plans\\.docx\n")
    transcript = tmp_path / "calls.jsonl"

    plain = await investigate(transport, mode, scratch, profile, [])
    everything = "\n".join(a.everything for a in plain)
    missing = [p for p in PLANTED if p.lower() not in everything.lower()]
    assert not missing, f"the unredacted {profile} investigation never showed {missing}: the test proves nothing"

    privacy = ["--redact", "--redact-rules", str(rules), "--transcript", str(transcript)]
    redacted = await investigate(transport, mode, scratch, profile, privacy)
    assert len(redacted) == len(plain)
    for planted in PLANTED:
        assert not found(redacted, planted), f"{planted!r} reached the client"

    # Every answer that held planted data counts its replacements in the trailer (and _meta).
    counted = 0
    for before, after in zip(plain, redacted):
        if not any(p.lower() in before.everything.lower() for p in PLANTED):
            continue
        trailer = TRAILER.search(after.text)
        if trailer is None:  # a refusal (JSON-RPC error) has no trailer
            continue
        counted += 1
        assert int(trailer.group(1)) > 0
        assert after.meta and after.meta["ntdbg/redacted"]["total"] == int(trailer.group(1)), after.meta
    assert counted > 0, "no answer said what it redacted"
    assert any("rule" in (TRAILER.search(a.text) or [""])[0] for a in redacted), "the rules file never applied"

    # Addresses and symbols are the same, answer by answer.
    for before, after in zip(plain, redacted):
        for pattern in (ADDRESS, SYMBOL):
            assert sorted(set(pattern.findall(before.everything))) == sorted(
                set(pattern.findall(after.everything))
            ), f"{pattern.pattern} differs in\n{before.text[:400]}\n--- vs ---\n{after.text[:400]}"

    # The transcript: one line per call, redacted, readable by its owner only.
    assert stat.S_IMODE(os.stat(transcript).st_mode) == 0o600
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert len(lines) == len(redacted)
    assert all(set(line) >= {"time_ms", "tool", "arguments", "redacted", "elapsed_ms"} for line in lines)
    assert all(("result" in line) != ("error" in line) for line in lines)
    for planted in PLANTED:
        assert planted.lower() not in transcript.read_text().lower(), f"{planted!r} is in the transcript"


async def test_a_bad_rules_file_or_transcript_stops_the_server(scratch: Path, tmp_path: Path) -> None:
    import subprocess

    from conftest import ntdbg_command

    bad = tmp_path / "bad.txt"
    bad.write_text("fine\n(unclosed\n")
    for extra, message in [
        (["--redact-rules", str(bad)], "line 2: not a regular expression"),
        (["--redact-rules", str(tmp_path / "none.txt")], "cannot read the redaction rules"),
        (["--transcript", str(tmp_path / "no" / "dir.jsonl")], "cannot open the transcript"),
    ]:
        run = subprocess.run(
            [*ntdbg_command(), *mcp_args(scratch), *extra],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 2 and message in run.stderr, (extra, run.stderr)
