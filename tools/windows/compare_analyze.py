#!/usr/bin/env python3
"""Checks that ntdbg.exe under Wine analyses every dump as the Linux ntdbg does.

    tools/windows/compare_analyze.py LINUX_NTDBG WINDOWS_NTDBG_EXE [DUMP_DIR...]

For every `*.dmp` file under the dump folders (default: the repository's testdata/ and the
shared corpus ../shared/testdata, or $NTDBG_TESTDATA), runs `ntdbg analyze --json --offline
DUMP` with both binaries (the Windows one through `wine`, from the same working directory, with
the same host path as argument) and compares their exit codes and JSON reports. Exits 1 when
any dump differs, printing a unified diff of the first lines that differ.

Normalised before comparing, and nothing else: in every JSON string, the Wine spellings of a
host path, `\\\\?\\Z:\\` and `Z:\\` (Wine maps the Linux root `/` as drive Z:), become `/`, and then
in a string that starts with `/` (a host path) every `\\` becomes `/`. Strings from the dump
itself (module paths such as `C:\\Windows\\...`) are not touched.
"""

from __future__ import annotations

import concurrent.futures
import difflib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 300
WINE_HOST_ROOT = re.compile(r"^(\\\\\?\\)?[Zz]:[\\/]")


def default_dirs() -> list[Path]:
    dirs = [REPO / "testdata"]
    if env := os.environ.get("NTDBG_TESTDATA"):
        dirs.append(Path(env))
    else:
        for ancestor in REPO.parents:
            if (ancestor / "shared" / "testdata").is_dir():
                dirs.append(ancestor / "shared" / "testdata")
                break
    return dirs


def normalise(value):
    """The report with Wine's host-path spellings turned into Linux ones (see the module doc)."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str):
        text = WINE_HOST_ROOT.sub("/", value)
        return text.replace("\\", "/") if text.startswith("/") else text
    return value


def analyze(command: list[str], dump: Path) -> tuple[int, object]:
    env = {**os.environ, "NTDBG_OFFLINE": "1", "WINEDEBUG": "-all"}
    try:
        done = subprocess.run(
            [*command, "analyze", "--json", "--offline", str(dump)],
            capture_output=True, timeout=TIMEOUT, env=env, cwd=REPO, stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {TIMEOUT} s"
    out = done.stdout.decode("utf-8", "replace")
    try:
        report: object = normalise(json.loads(out)) if out.strip() else None
    except json.JSONDecodeError as e:
        report = f"not JSON ({e}): {out[:500]}"
    if report is None:
        report = "stderr: " + done.stderr.decode("utf-8", "replace").strip()[-500:]
    return done.returncode, report


def compare(linux: list[str], windows: list[str], dump: Path) -> str | None:
    """None when both agree, else what differs."""
    a, b = analyze(linux, dump), analyze(windows, dump)
    if a == b:
        return None
    lines = lambda r: json.dumps({"exit": r[0], "report": r[1]}, indent=1, sort_keys=True).splitlines()
    diff = list(difflib.unified_diff(lines(a), lines(b), "linux", "windows", n=1, lineterm=""))
    return "\n".join(diff[:40])


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    linux = [sys.argv[1]]
    windows = ["wine", sys.argv[2]]
    dirs = [Path(d) for d in sys.argv[3:]] or default_dirs()
    dumps = sorted({p.resolve() for d in dirs for p in d.rglob("*") if p.suffix.lower() == ".dmp" and p.is_file()})
    if not dumps:
        print(f"no dumps under {', '.join(map(str, dirs))}", file=sys.stderr)
        return 1
    started = time.monotonic()
    jobs = int(os.environ.get("NTDBG_COMPARE_JOBS", "2"))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for dump, diff in zip(dumps, pool.map(lambda d: compare(linux, windows, d), dumps)):
            if diff is not None:
                failed += 1
                print(f"DIFFERS: {dump}\n{diff}\n", flush=True)
    took = time.monotonic() - started
    print(f"compare-analyze: {len(dumps) - failed} of {len(dumps)} dumps agree ({took:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
