"""Native live debugging of Windows processes (`pid:` / `exe:`) through the Win32 debugging API,
driven from Linux: the Windows build of ntdbg runs under Wine (`wine ntdbg.exe mcp`, the official
MCP Python SDK over stdio) and debugs testdata/win32live/live.exe (tools/crashgen/samples/live.c)
in the same Wine prefix; testdata/livectl/livectl.exe (tools/crashgen/samples/livectl.c) for run
control that never changes the program (issue 34): steps from a breakpoint on a one-byte `push`,
and a breakpoint hit by four threads at once.

Skipped loudly unless $NTDBG_WIN_BIN names the built ntdbg.exe (with bcryptprimitives.dll next to
it, see tests/win32/) and `wine` is on PATH. $WINEPREFIX is used when set, else a fresh prefix in
a temporary folder (about 20 s to create once).

Assertions on texts that the engine prints for Windows debug events (exception first/second
chance, ModLoad, debug strings, .dump, .lastevent) are marked `# h18c:`: they follow the texts
fixed for issue 18.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from conftest import MODES, REPO
from helpers import call, ok, text

pytestmark = pytest.mark.anyio

SAMPLE_DIR = REPO / "testdata" / "win32live"


def _skip(reason: str) -> None:
    print(f"\n*** SKIP Win32 live tests: {reason} ***\n", file=sys.stderr)
    pytest.skip(reason)


def win_path(path: Path) -> str:
    """The Windows name of a Linux path under Wine (drive Z: is the root)."""
    return "Z:" + str(path.resolve()).replace("/", "\\")


@pytest.fixture(scope="module")
def wine_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    exe = os.environ.get("NTDBG_WIN_BIN")
    if not exe:
        _skip("NTDBG_WIN_BIN is not set (the Windows build of ntdbg.exe: tools/windows/build.sh, then tests/win32/live.sh)")
    if not Path(exe).is_file():
        _skip(f"NTDBG_WIN_BIN={exe} does not exist")
    if shutil.which("wine") is None or shutil.which("wineserver") is None:
        _skip("wine is not on PATH (apt-get install -y wine wine64)")
    if not (Path(exe).parent / "bcryptprimitives.dll").is_file():
        _skip(f"no bcryptprimitives.dll next to {exe} (Wine 8 lacks it; tools/windows/build.sh builds it)")
    if not (SAMPLE_DIR / "live.exe").is_file():
        _skip("testdata/win32live/live.exe is missing (bash tools/crashgen/samples.sh live)")
    prefix = os.environ.get("WINEPREFIX") or str(tmp_path_factory.mktemp("wineprefix") / "prefix")
    env = {
        **os.environ,
        "WINEPREFIX": prefix,
        "WINEDEBUG": "-all",
        "WINEDLLOVERRIDES": "mscoree,mshtml=",
        "DISPLAY": "",
    }
    started = time.monotonic()
    subprocess.run(["wine", "wineboot", "-i"], env=env, timeout=300, capture_output=True)
    print(f"\nWine prefix ready in {time.monotonic() - started:.1f} s", file=sys.stderr)
    yield env
    subprocess.run(["wineserver", "-k"], env=env, stderr=subprocess.DEVNULL, timeout=60)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder with live.exe and live.pdb (the allowed directory of the server)."""
    for name in ("live.exe", "live.pdb"):
        shutil.copy(SAMPLE_DIR / name, tmp_path / name)
    return tmp_path


@asynccontextmanager
async def server(env: dict[str, str], work: Path) -> AsyncIterator[Client]:
    exe = os.environ["NTDBG_WIN_BIN"]
    params = StdioServerParameters(
        command="wine",
        args=[exe, "mcp", "--offline", "--allow-dir", win_path(work)],
        env=env,
        cwd=str(work),
    )
    async with Client(params, mode=MODES[0]) as client:
        yield client


class Timer:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    async def __call__(self, client: Client, label: str, tool: str, **args):
        started = time.monotonic()
        result = await call(client, tool, **args)
        self.timings[label] = round((time.monotonic() - started) * 1000, 1)
        return result


async def command(client: Client, sid: str, line: str, timeout_ms: int = 30000) -> dict:
    return ok(await call(client, "run_command", session_id=sid, command=line, timeout_ms=timeout_ms))


def output(result: dict) -> str:
    return "\n".join(r.get("output", "") for r in result["results"])


async def go_until(client: Client, sid: str, want: str, tries: int = 20) -> str:
    """`g` until the output says `want`; events the engine shows on the way (thread starts, a
    module load) are passed. Returns every output seen."""
    seen = []
    for _ in range(tries):
        r = await command(client, sid, "g")
        seen.append(output(r) + "\n" + r["trailer"])
        if want in seen[-1]:
            return "\n".join(seen)
    raise AssertionError(f"never saw {want!r} after {tries} g:\n" + "\n---\n".join(seen))


def status(path: Path) -> tuple[int, int] | None:
    try:
        m = re.search(r"pid=(\d+) count=(-?\d+)", path.read_text())
    except OSError:
        return None
    return (int(m.group(1)), int(m.group(2))) if m else None


def wait_status(path: Path, more_than: int, within: float) -> tuple[int, int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        s = status(path)
        if s and s[1] > more_than:
            return s
        time.sleep(0.1)
    raise AssertionError(f"{path.name} did not go past count {more_than} within {within} s: {status(path)}")


async def test_started_process_breakpoint_step_locals_watch_detach(wine_env, work: Path) -> None:
    """exe: start live.exe under the debugger, bp by symbol, p/t, dv, ba w4, detach: it goes on."""
    status_file = work / "status.txt"
    t = Timer()
    async with server(wine_env, work) as client:
        target = f"exe:{win_path(work / 'live.exe')} loop {win_path(status_file)}"
        r = ok(await t(client, "attach", "attach", target=target, timeout_seconds=60))
        sid = r["session_id"]
        assert r["run_state"] == "halted", r
        lm = await command(client, sid, "lm")
        assert "live" in output(lm), lm
        bp = await command(client, sid, "bp live!worker")
        assert bp["results"][0]["status"] == "succeeded", bp
        started = time.monotonic()
        hit = await go_until(client, sid, "Breakpoint 0 hit")
        t.timings["g to bp"] = round((time.monotonic() - started) * 1000, 1)
        assert "live!worker" in hit, hit
        k = await command(client, sid, "k")
        assert "live!worker" in output(k) and "live!worker_thread" in output(k), k
        # Step over the prologue, then the locals read from the PDB.
        for _ in range(3):
            p = await command(client, sid, "p")
            assert p["trailer"].startswith("[target halted @ "), p
        tr = await command(client, sid, "t")
        assert tr["trailer"].startswith("[target halted @ "), tr
        dv = await command(client, sid, "dv")
        assert "round" in output(dv) and "local_value" in output(dv), dv
        # Watch the global: the next write stops the target.
        await command(client, sid, "bc *")
        ba = await command(client, sid, "ba w4 live!live_counter")
        assert ba["results"][0]["status"] == "succeeded", ba
        watch = await go_until(client, sid, "Breakpoint 1 hit")
        assert "live!worker" in watch, watch
        await command(client, sid, "bc *")
        before = status(status_file)
        assert before is not None
        c = ok(await t(client, "close", "close_session", session_id=sid))
        assert "detached" in c["detach"], c
        after = wait_status(status_file, before[1], within=20)
        assert after[0] == before[0]
    print(f"\nWin32 exe: timings (ms): {t.timings}", file=sys.stderr)


async def test_attach_to_running_process(wine_env, work: Path) -> None:
    """pid: attach to live.exe started on its own, break at worker, detach: it goes on."""
    status_file = work / "running.txt"
    program = subprocess.Popen(
        ["wine", str(work / "live.exe"), "loop", win_path(status_file)],
        env=wine_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    t = Timer()
    try:
        pid, count = wait_status(status_file, 0, within=60)
        async with server(wine_env, work) as client:
            r = ok(await t(client, "attach", "attach", target=f"pid:{pid}", timeout_seconds=60))
            sid = r["session_id"]
            assert r["run_state"] == "halted", r
            assert r["target"] == f"pid:{pid}"
            await command(client, sid, f".sympath {win_path(work)}")
            await command(client, sid, ".reload")
            bp = await command(client, sid, "bp live!worker")
            assert bp["results"][0]["status"] == "succeeded", bp
            hit = await go_until(client, sid, "Breakpoint 0 hit")
            assert "live!worker" in hit, hit
            await command(client, sid, "bc *")
            # Run free, then break in (DebugBreakProcess).
            running = await command(client, sid, "g", timeout_ms=200)
            assert running["trailer"] == "[target running]", running
            b = ok(await t(client, "break_in", "break_in", session_id=sid))
            assert b["run_state"] == "halted", b
            before = status(status_file)
            assert before is not None
            ok(await t(client, "close", "close_session", session_id=sid))
        wait_status(status_file, before[1], within=20)
        assert program.poll() is None, "the program ended: the detach did not leave it running"
    finally:
        program.kill()
        program.wait(timeout=10)
    print(f"\nWin32 pid: timings (ms): {t.timings}", file=sys.stderr)


async def test_crash_first_chance_dump_and_open(wine_env, work: Path) -> None:
    """exe: live.exe crash: the access violation stops first chance; .dump /ma writes a dump in
    the allowed folder that open_dump reads; then the second chance."""
    async with server(wine_env, work) as client:
        target = f"exe:{win_path(work / 'live.exe')} crash"
        sid = ok(await call(client, "attach", target=target, timeout_seconds=60))["session_id"]
        seen = await go_until(client, sid, "c0000005")
        # h18c: the WinDbg text of a first-chance access violation.
        assert "Access violation - code c0000005 (first chance)" in seen, seen
        assert "live!crash_here" in seen, seen
        dump = work / "crash.dmp"
        # h18c: .dump on a live Windows target (the stub writes it with MiniDumpWriteDump).
        d = await command(client, sid, f".dump /ma {win_path(dump)}")
        assert d["results"][0]["status"] == "succeeded", d
        assert dump.is_file() and dump.stat().st_size > 0
        opened = ok(await call(client, "open_dump", path=win_path(dump)))
        assert "c0000005" in text(await call(client, "run_command", session_id=opened["session_id"], command=".lastevent")) or (
            "c0000005" in str(opened)
        ), opened
        # h18c: gn passes it on; the second chance follows.
        second = await command(client, sid, "gn")
        assert "second chance" in output(second) + second["trailer"], second
        ok(await call(client, "close_session", session_id=sid, resume=True))


async def test_debug_strings_and_late_module(wine_env, work: Path) -> None:
    """print and late modes: OutputDebugString text and the ModLoad of version.dll."""
    async with server(wine_env, work) as client:
        sid = ok(
            await call(client, "attach", target=f"exe:{win_path(work / 'live.exe')} print", timeout_seconds=60)
        )["session_id"]
        # h18c: a debug string is shown as its text.
        await command(client, sid, "sxe out")
        printed = await go_until(client, sid, "live: round")
        assert "live: round 0" in printed, printed
        # h18c: .lastevent on a live target.
        last = await command(client, sid, ".lastevent")
        assert output(last).startswith("Last event: "), last
        ok(await call(client, "close_session", session_id=sid, resume=False))
        sid = ok(
            await call(client, "attach", target=f"exe:{win_path(work / 'live.exe')} late", timeout_seconds=60)
        )["session_id"]
        # h18c: sxe ld stops at module loads; the ModLoad line names the DLL.
        await command(client, sid, "sxe ld")
        loaded = await go_until(client, sid, "version.dll")
        assert re.search(r"ModLoad: [0-9a-f`]+ [0-9a-f`]+ +\S*version\.dll", loaded, re.I), loaded
        ok(await call(client, "close_session", session_id=sid))


def test_cli_run_attach(wine_env, work: Path) -> None:
    """`ntdbg.exe run --attach exe:… -c "bp live!worker; g; k"` under Wine."""
    exe = os.environ["NTDBG_WIN_BIN"]
    started = time.monotonic()
    # Output to files, not pipes: under Wine the debuggee's Unix process inherits the pipes and
    # keeps running after the detach, so a pipe would never reach end of file.
    out, errs = work / "cli.out", work / "cli.err"
    with out.open("w") as stdout, errs.open("w") as stderr:
        cli = subprocess.Popen(
            ["wine", exe, "run", "--attach", f"exe:{win_path(work / 'live.exe')} loop", "-c", "bp live!worker; g; k"],
            env=wine_env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            cwd=str(work),
        )
        try:
            code = cli.wait(timeout=180)
        finally:
            cli.kill()
    print(f"\nCLI run --attach took {time.monotonic() - started:.1f} s", file=sys.stderr)
    printed = out.read_text()
    assert code == 0, (code, printed, errs.read_text())
    assert "Breakpoint 0 hit" in printed and "live!worker_thread" in printed, printed


async def test_close_without_resume_leaves_it_suspended(wine_env, work: Path) -> None:
    """close_session(resume:false) detaches with every thread suspended: the program stops."""
    status_file = work / "suspended.txt"
    async with server(wine_env, work) as client:
        target = f"exe:{win_path(work / 'live.exe')} loop {win_path(status_file)}"
        sid = ok(await call(client, "attach", target=target, timeout_seconds=60))["session_id"]
        await command(client, sid, "bp live!worker")
        await go_until(client, sid, "Breakpoint 0 hit")
        await command(client, sid, "bc *")
        c = ok(await call(client, "close_session", session_id=sid, resume=False))
        assert "suspend" in str(c), c
        before = status(status_file)
        time.sleep(2)
        assert status(status_file) == before, "the program ran on after a suspended detach"


LIVECTL_DIR = REPO / "testdata" / "livectl"


@pytest.fixture
def livectl(tmp_path: Path) -> Path:
    """A folder with livectl.exe and livectl.pdb (tools/crashgen/samples/livectl.c)."""
    for name in ("livectl.exe", "livectl.pdb"):
        shutil.copy(LIVECTL_DIR / name, tmp_path / name)
    return tmp_path


def registers(out: str) -> dict[str, str]:
    """Every `name=value` of `r`'s text: the integer registers, rip, efl, iopl and segments."""
    found = dict(re.findall(r"\b(\w+)=([0-9a-f]+)\b", out))
    assert {"rax", "rsp", "rip", "efl", "cs"} <= found.keys(), out
    return found


# Instructions stepped from step_here's first one.
STEPS = 10


async def _steps_through_step_here(wine_env, work: Path, on_entry: bool) -> list[dict[str, str]]:
    """`livectl steps` under the debugger: the registers at step_here's entry and after each of
    ten instructions, stepped with `t` and `p` in turn, from a breakpoint on its first
    instruction, a one-byte `push` (`on_entry`), or from one on main's call to it."""
    async with server(wine_env, work) as client:
        target = f"exe:{win_path(work / 'livectl.exe')} steps"
        sid = ok(await call(client, "attach", target=target, timeout_seconds=60))["session_id"]
        entry = output(await command(client, sid, "? livectl!step_here"))
        step_here = int(re.search(r"= ([0-9a-f`]+)", entry).group(1).replace("`", ""), 16)
        if on_entry:
            first = output(await command(client, sid, "u livectl!step_here L1"))
            assert re.search(r"^[0-9a-f`]+ [0-9a-f]{2} +push ", first, re.M), first
            await command(client, sid, "bp livectl!step_here")
            await go_until(client, sid, "Breakpoint 0 hit")
        else:
            listing = output(await command(client, sid, "uf livectl!main"))
            calls = [l for l in listing.splitlines() if "call" in l and "livectl!step_here" in l]
            assert calls, listing
            await command(client, sid, f"bp 0x{calls[0].split()[0].replace('`', '')}")
            await go_until(client, sid, "Breakpoint 0 hit")
            await command(client, sid, "t")
        seen = [registers(output(await command(client, sid, "r")))]
        assert int(seen[0]["rip"], 16) == step_here, seen[0]
        for step in range(STEPS):
            r = await command(client, sid, ("t" if step % 2 == 0 else "p") + "; r")
            seen.append(registers(r["results"][-1]["output"]))
        ok(await call(client, "close_session", session_id=sid, resume=False))
    return seen


async def test_steps_from_a_breakpoint_on_a_one_byte_push_match_the_untouched_code(wine_env, livectl: Path) -> None:
    """`t`/`p` ten times from a breakpoint on step_here's one-byte `push` (issue 34) leave every
    register as the same steps from main's call do, with no breakpoint in step_here: equal, or
    for a register the code never touches whose value at the entry is the run's own, still that
    value in both runs."""
    reference = await _steps_through_step_here(wine_env, livectl, on_entry=False)
    from_breakpoint = await _steps_through_step_here(wine_env, livectl, on_entry=True)
    for step, (got, want) in enumerate(zip(from_breakpoint, reference)):
        for name, value in want.items():
            untouched = from_breakpoint[0][name] != reference[0][name] and (
                got[name] == from_breakpoint[0][name] and value == reference[0][name]
            )
            assert got[name] == value or untouched, f"{name} after step {step}: {got} vs {want}"
    entry_rsp = int(reference[0]["rsp"], 16)
    assert int(reference[1]["rsp"], 16) == entry_rsp - 8, "push"


# Times the breakpoint hit by four threads is run to.
THREAD_STOPS = 50


def thread_pcs(out: str) -> dict[str, int]:
    """`~*r rip`'s text: each thread's id (`Id: pid.tid`) and rip."""
    pcs: dict[str, int] = {}
    tid = None
    for line in out.splitlines():
        if m := re.search(r"Id: [0-9a-f]+\.([0-9a-f]+)", line):
            tid = m.group(1)
        elif (m := re.match(r"rip=([0-9a-f]+)", line.strip())) and tid is not None:
            pcs[tid] = int(m.group(1), 16)
    return pcs


async def test_a_breakpoint_hit_by_four_threads_stops_on_the_thread_that_hit_it(wine_env, livectl: Path) -> None:
    """`livectl threads`: four workers call mt_hit in a tight loop. Fifty times, `g` stops at the
    breakpoint on mt_hit on the thread the event names (`.lastevent`), the current thread, with
    rip at the breakpoint, and thread numbers do not change; a `t`/`p` from there moves that
    thread alone (the Win32 stub holds the others while it steps)."""
    async with server(wine_env, livectl) as client:
        target = f"exe:{win_path(livectl / 'livectl.exe')} threads"
        sid = ok(await call(client, "attach", target=target, timeout_seconds=60))["session_id"]
        hit = output(await command(client, sid, "? livectl!mt_hit"))
        mt_hit = int(re.search(r"= ([0-9a-f`]+)", hit).group(1).replace("`", ""), 16)
        await command(client, sid, "bp livectl!mt_hit")
        threads_seen = set()
        numbers: dict[str, str] = {}
        for stop in range(THREAD_STOPS):
            await go_until(client, sid, "Breakpoint 0 hit")
            last = output(await command(client, sid, ".lastevent"))
            event_tid = re.search(r"Last event: [0-9a-f]+\.([0-9a-f]+): Hit breakpoint 0", last).group(1)
            current = output(await command(client, sid, "~."))
            m = re.search(r"\.\s+(\d+)\s+Id: [0-9a-f]+\.([0-9a-f]+)", current)
            assert m and m.group(2) == event_tid, (stop, last, current)
            number, tid = m.groups()
            assert numbers.setdefault(tid, number) == number, f"stop {stop}: thread {tid} renumbered"
            threads_seen.add(tid)
            before = thread_pcs(output(await command(client, sid, "~*r rip")))
            assert before[tid] == mt_hit, (stop, before)
            step = "t" if stop % 2 == 0 else "p"
            stepped = await command(client, sid, step)
            assert "Breakpoint" not in output(stepped), (stop, stepped)
            after = thread_pcs(output(await command(client, sid, "~*r rip")))
            # mt_hit's first instruction: `add qword ptr [livectl!mt_total], rcx`, 7 bytes.
            assert after[tid] == mt_hit + 7, (stop, tid, before, after, output(stepped))
            for other, pc in before.items():
                if other != tid and other in after:
                    assert after[other] == pc, f"stop {stop}: {step} on {tid} moved {other}: {before} -> {after}"
        assert len(threads_seen) > 1, threads_seen
        print(f"\nWin32 stub: {THREAD_STOPS} of {THREAD_STOPS} stops on the thread that hit; {len(threads_seen)} threads", file=sys.stderr)
        ok(await call(client, "close_session", session_id=sid, resume=False))
