#!/usr/bin/env python3
"""Truncated dumps: every dump of the shared corpus cut at 64 offsets, read by ntdbg and by
minidump-stackwalk; how many cuts each still reports on, and whether every fact a report on a
cut gives equals the same tool's report on the whole dump.

usage:
  bench/truncated-dumps.py [--ntdbg PATH] [--msw PATH] [--cuts N] [--jobs N] [--details]
                           [--only SUBSTRING]

- Both tools write minidump-stackwalk's JSON report (`ntdbg stackwalk --json`,
  `minidump-stackwalk --json`), with the symbols the corpus README lists for each dump.
- The cuts: N offsets spread evenly over each dump (size * k / (N + 1), k = 1..N).
- A report: the tool ended with status 0 and printed a JSON report.
- The facts a report gives, each compared with the same tool's report on the whole dump:
  the crash (type, address, crashing thread id), the system (OS, version number, service
  pack, CPU), every module (file name, base, end; debug id and code id where the cut report
  gives them: all zeros is the schema's "none"), and every frame of every thread (by thread
  id and frame index: module, offset, function, each where given). A fact the cut report
  leaves out is a loss, not a difference; a fact it gives that differs from the whole dump's,
  or that the whole dump's report does not have, is a difference (what must never happen: a
  value read from past the end). Frames found by stack scanning or frame pointers are counted
  apart: they are guesses in every tool.
"""
import argparse
import collections
import concurrent.futures
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
spec = importlib.util.spec_from_file_location("stacks", os.path.join(HERE, "stacks-vs-stackwalk.py"))
stacks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stacks)
if not os.path.isdir(stacks.CORPUS):  # a worktree deeper than the repository: look further up
    for up in range(2, 5):
        candidate = os.path.join(ROOT, *[".."] * up, "shared", "testdata")
        if os.path.isdir(candidate):
            stacks.CORPUS = candidate
            break

GUESSED = {"scan", "cfi_scan", "frame_pointer"}


def symbol_dirs(rel):
    extra = stacks.STORED.get(rel, (None, None))[1]
    return [os.path.join(stacks.CORPUS, extra)] if extra else []


def report(cmd):
    """The JSON report of `cmd`, or None when it failed or printed none."""
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0:
        return None
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return None


def facts(r):
    """(kind, key) -> value for every fact a report gives."""
    out = {}
    crash = r.get("crash_info") or {}
    if crash.get("type"):
        out[("crash", "type")] = crash["type"]
    if crash.get("address"):
        out[("crash", "address")] = crash["address"]
    crashing = r.get("crashing_thread") or {}
    if crashing.get("thread_id") is not None:
        out[("crash", "thread_id")] = crashing["thread_id"]
    system = r.get("system_info") or {}
    for key in ("os", "cpu_arch"):
        if system.get(key):
            out[("system", key)] = system[key]
    # The version number and the service pack (a string the file may have lost) apart.
    version, _, service_pack = (system.get("os_ver") or "").partition(" ")
    if version:
        out[("system", "version")] = version
    if service_pack:
        out[("system", "service pack")] = service_pack
    for m in r.get("modules") or []:
        name = (m.get("filename"), m.get("base_addr"))
        out[("module", name, "end")] = m.get("end_addr")
        for key in ("debug_id", "code_id"):
            if (m.get(key) or "").strip("0"):  # all zeros: the schema's "none"
                out[("module", name, key)] = m[key]
    # The crashing thread is walked from the exception's context, in `threads` too: its
    # frames are another fact than the same thread's walk from its own context.
    threads = list(r.get("threads") or [])
    for i, t in enumerate(threads):
        t["from_exception"] = i == crash.get("crashing_thread")
    for t in threads:
        tid = (t.get("thread_id"), t["from_exception"])
        for f in t.get("frames") or []:
            kind = "guessed frame" if f.get("trust") in GUESSED else "frame"
            for key in ("module", "offset", "function"):
                if f.get(key) is not None:
                    out[(kind, tid, f.get("frame"), key)] = f[key]
    return out


def compare(cut, whole):
    """(facts given, facts differing by kind, examples). A thread the cut report walks from
    its own context (its exception record lost) while the whole dump's report walks it from
    the exception's has nothing to compare with: such facts count as `uncomparable`."""
    given = differing = 0
    by_kind = collections.Counter()
    examples = []
    from_exception = {k[1][0] for k in whole if k[0].endswith("frame") and k[1][1]}
    for key, value in cut.items():
        if key[0].endswith("frame") and not key[1][1] and key[1][0] in from_exception and key not in whole:
            by_kind["uncomparable"] += 1
            continue
        given += 1
        if whole.get(key) != value:
            differing += 1
            by_kind[key[0]] += 1
            if len(examples) < 6:
                examples.append(f"{key}: {value!r} (whole dump: {whole.get(key)!r})")
    return given, by_kind, examples


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ntdbg", default=os.path.join(ROOT, "target", "release", "ntdbg"))
    ap.add_argument("--msw", default=os.path.expanduser("~/.cargo/bin/minidump-stackwalk"))
    ap.add_argument("--cuts", type=int, default=64)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--details", action="store_true")
    ap.add_argument("--only", default="", help="only dumps whose path contains this")
    args = ap.parse_args()

    tools = {
        "ntdbg": lambda path, syms: [args.ntdbg, "stackwalk", "--json", path, *syms],
        "msw": lambda path, syms: [args.msw, "--json", path, *syms],
    }
    totals = {t: collections.Counter() for t in tools}
    kinds = {t: collections.Counter() for t in tools}
    rows = []
    with tempfile.TemporaryDirectory(prefix="ntdbg-truncated-") as work:
        for rel, path in sorted(stacks.dumps(work)):
            if args.only not in rel:
                continue
            syms = symbol_dirs(rel)
            data = open(path, "rb").read()
            whole = {t: report(cmd(path, syms)) for t, cmd in tools.items()}
            whole_facts = {t: facts(r) if r else {} for t, r in whole.items()}
            cuts = sorted({len(data) * k // (args.cuts + 1) for k in range(1, args.cuts + 1)})

            def one(offset):
                cut_path = os.path.join(work, f"cut-{offset}-{os.path.basename(path)}")
                with open(cut_path, "wb") as f:
                    f.write(data[:offset])
                try:
                    return offset, {t: report(cmd(cut_path, syms)) for t, cmd in tools.items()}
                finally:
                    os.remove(cut_path)

            row = {t: collections.Counter() for t in tools}
            with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                for offset, reports in pool.map(one, cuts):
                    for t, r in reports.items():
                        row[t]["cuts"] += 1
                        if r is None:
                            continue
                        row[t]["reports"] += 1
                        given, by_kind, examples = compare(facts(r), whole_facts[t])
                        row[t]["facts"] += given
                        row[t]["differing"] += sum(
                            v for k, v in by_kind.items() if k not in ("guessed frame", "uncomparable"))
                        row[t]["guessed differing"] += by_kind["guessed frame"]
                        kinds[t].update(by_kind)
                        if args.details and examples:
                            for e in examples:
                                print(f"  {t} {rel} @{offset}: {e}", file=sys.stderr)
            for t in tools:
                totals[t].update(row[t])
            rows.append((rel, len(data), row))

    print("| dump | bytes | cuts | ntdbg reports | msw reports | ntdbg facts | ntdbg differing | msw facts | msw differing |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rel, size, row in rows:
        n, m = row["ntdbg"], row["msw"]
        print(f"| {rel} | {size} | {n['cuts']} | {n['reports']} | {m['reports']} | {n['facts']} | "
              f"{n['differing']} | {m['facts']} | {m['differing']} |")
    n, m = totals["ntdbg"], totals["msw"]
    print(f"| **all** | | {n['cuts']} | {n['reports']} | {m['reports']} | {n['facts']} | "
          f"{n['differing']} | {m['facts']} | {m['differing']} |")
    print()
    for t in tools:
        print(f"{t}: differing by kind {dict(kinds[t])}; guessed frames (stack scan, frame pointer) "
              f"differing: {totals[t]['guessed differing']}")


if __name__ == "__main__":
    main()
