#!/usr/bin/env python3
"""Every thread's frames of every dump in the shared corpus: ntdbg against minidump-stackwalk,
and against an earlier ntdbg run (before/after a walker change).

usage:
  bench/stacks-vs-stackwalk.py [--ntdbg PATH] [--save FILE] [--before FILE] [--details]
                               [--extra DIR]...

- ntdbg: `ntdbg run DUMP -c "~*k" --json --offline` (every thread from its own context) and
  `.ecxr; k` for the thread of the exception (minidump-stackwalk walks that one from the
  exception context). Inline frames are left out: minidump-stackwalk nests them in their frame.
- minidump-stackwalk: the stored runs in `_generated-minidump-stackwalk-0.27.0/` (same
  symbols as listed in the corpus README; `realworld/` has its own, made without symbols);
  when `minidump-stackwalk` is on PATH, also a fresh run for the dumps without a stored one
  (the Wine dumps, with no symbols: Wine writes no CodeView records).
- `--extra DIR` adds every dump under DIR (e.g. dumps fetched for a walker change, kept out of
  the repository), compared with a fresh minidump-stackwalk run.
- Frames are compared by address: the exact instruction for frame 0, the return address for
  callers (minidump-stackwalk prints return address - 1 for callers, - 4 on ARM64; added back).
- `--save` writes ntdbg's frames to FILE; `--before` compares with such a file: frames added,
  removed, and found_by / trust changes.
- "msw trusted, not ntdbg": minidump-stackwalk frames found by context, CFI or frame pointer
  (not scanning) on an unbroken chain of such frames from the context, whose address ntdbg's
  stack of that thread lacks. A CFI or frame-pointer step taken from a scanned frame is only as
  good as the scan; "msw cfi/fp anywhere" counts those too. "of which not code": those at an
  address the dump's memory info list shows free, reserved or not executable (refuted frames).
- Deep stacks (ntdbg's `k` stops at 1,024 frames unless given a count) are walked whole with
  `k 0n262144`, as minidump-stackwalk walks them.
"""
import argparse
import collections
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.environ.get("NTDBG_TESTDATA", os.path.join(ROOT, "..", "shared", "testdata"))
GENERATED = "_generated-minidump-stackwalk-0.27.0"
REALWORLD = "realworld/"
BP = "google-breakpad/src/processor/testdata"
FF_SYMS = "mozilla-minidump-stackwalk-pgo/pgo_data/symbols"

# dump (relative to the corpus) -> (stored minidump-stackwalk run, extra symbol dir or None)
STORED = {
    "getsentry-symbolic/symbolic-testutils/fixtures/windows/mini.dmp": ("symbolic-windows-mini", None),
    "llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs/sigsegv.dmp": ("lldb-sigsegv", None),
    "llvm-lldb/packages/Python/lldbsuite/test/functionalities/postmortem/minidump/fizzbuzz_no_heap.dmp": ("lldb-fizzbuzz_no_heap", None),
    "rust-minidump/testdata/invalid-parameter.dmp": ("rust-minidump-invalid-parameter", None),
    "rust-minidump/testdata/test.dmp": ("breakpad-minidump2", "rust-minidump/testdata/symbols"),
    "mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-x86_64.dmp": ("firefox-windows-x86_64", FF_SYMS),
    "mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-aarch64.dmp": ("firefox-windows-aarch64", FF_SYMS),
}
for name in ["minidump2", "minidump_32bit_crash_addr", "ascii_read_av", "ascii_write_av",
             "null_read_av", "null_write_av", "read_av_non_null", "stack_exhaustion",
             "tiny-exe-fastfail", "tiny-exe-with-cet-xsave"]:
    STORED[f"{BP}/{name}.dmp"] = (f"breakpad-{name}", f"{BP}/symbols")

# A frame count past any stack's depth: `k` then walks to the end (ntdbg's default walk stops
# at 1,024 frames; minidump-stackwalk's never does).
DEEP = "0n262144"
# Frames `k` shows without a count.
DEFAULT_K = 256
# The walk from the exception context, in both tools, whichever thread each names for it: a
# dump may name the thread that wrote it, while the context's stack pointer lies in another
# thread's stack (ntdbg walks it there, minidump-stackwalk on the named thread).
EXCEPTION = "exception"

# Deliberately malformed: rejected by every tool.
MALFORMED = {"rust-minidump/testdata/invalid-range.dmp", "rust-minidump/testdata/invalid-record-count.dmp"}


def dumps(work, root=CORPUS):
    """(relative name, path to open) of every dump; xz-compressed ones are expanded into work."""
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            if GENERATED in rel or rel in MALFORMED:
                continue
            if f.endswith(".dmp"):
                yield rel, path
            elif f.endswith(".dmp.xz"):
                out = os.path.join(work, f[:-3])
                with lzma.open(path) as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                yield rel, out


def run_ntdbg(ntdbg, path, symbols, commands):
    cmd = [ntdbg, "run", path, "-c", commands, "--json", "--offline"]
    if symbols:
        cmd += ["--symbols", symbols]
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return []


def frames_of(stack):
    return [
        {
            "address": int(f["instruction"], 16),
            "found_by": f["found_by"],
            "trust": f.get("trust", ""),
            "where": (f.get("module") or "?") + ("!" + f["function"].split("(")[0] if f.get("function") else ""),
        }
        for f in stack["frames"]
        if not f.get("inline")
    ]


def ntdbg_threads(ntdbg, rel, path):
    extra = STORED.get(rel, (None, None))[1]
    symbols = os.path.dirname(path)
    if extra:
        symbols += ";" + os.path.join(CORPUS, extra)
    threads = {}
    for r in run_ntdbg(ntdbg, path, symbols, "~*k"):
        for s in ((r.get("result") or {}).get("stacks") or []):
            # `run --json` gives thread ids as hex strings ("0x24"), minidump-stackwalk numbers.
            tid = str(int(s["thread_id"], 16))
            threads[tid] = frames_of(s)
            if len(threads[tid]) >= DEFAULT_K:
                # A deep stack (a stack overflow): walk it whole, as minidump-stackwalk does.
                deep = run_ntdbg(ntdbg, path, symbols, f"~~[{s['thread_id']}]s; k {DEEP}")
                if len(deep) == 2 and (deep[1].get("result") or {}).get("kind") == "stack":
                    threads[tid] = frames_of(deep[1]["result"])
    results = run_ntdbg(ntdbg, path, symbols, f".ecxr; k {DEEP}")
    if len(results) == 2 and results[1].get("result") and results[1]["result"].get("kind") == "stack":
        threads[EXCEPTION] = frames_of(results[1]["result"])
    return threads


def stored_run(rel):
    """The stored minidump-stackwalk JSON of a corpus dump, if there is one."""
    if rel in STORED:
        return os.path.join(CORPUS, GENERATED, STORED[rel][0] + ".json")
    if rel.startswith(REALWORLD):
        name = rel[len(REALWORLD):].rsplit(".", 1)[0].replace("/", "_") + ".json"
        path = os.path.join(CORPUS, REALWORLD, GENERATED, name)
        if os.path.exists(path):
            return path
    return None


def msw_threads(rel, path, work, fresh=False):
    stored = None if fresh else stored_run(rel)
    if stored:
        with open(stored) as f:
            data = json.load(f)
        source = "stored"
    elif shutil.which("minidump-stackwalk"):
        p = subprocess.run(["minidump-stackwalk", "--json", "--features", "stable-all", path],
                           capture_output=True, text=True)
        try:
            data = json.loads(p.stdout)
        except json.JSONDecodeError:
            return None, "failed"
        source = "run"
    else:
        return None, "none"
    threads = {}
    # Callers are printed at return address - 1 (x86, x64) or - 4 (ARM64).
    back = 4 if (data.get("system_info") or {}).get("cpu_arch") == "arm64" else 1
    crashing = data.get("crashing_thread") or {}
    lists = list(data.get("threads") or [])
    for t in lists + ([crashing] if crashing.get("frames") else []):
        if not t.get("frames"):
            continue  # not walked (the thread that wrote the dump)
        # The crashing thread is walked from the exception context, in its list entry too.
        key = EXCEPTION if crashing.get("frames") and t["thread_id"] == crashing.get("thread_id") else str(t["thread_id"])
        frames = []
        chain = True  # no scanned frame above this one
        for f in t.get("frames") or []:
            off = int(f["offset"], 16)
            method = f.get("trust", "")
            chain = chain and method in ("context", "cfi", "frame_pointer")
            frames.append({
                "address": off if f["frame"] == 0 else off + back,
                "found_by": method,
                "trusted": chain,
                "method_trusted": method in ("context", "cfi", "frame_pointer"),
                "where": (f.get("module") or "?") + ("!" + f["function"] if f.get("function") else ""),
            })
        threads[key] = frames
    return threads, source


def compare(a, b):
    """(common prefix, in both, only in a, only in b) by address."""
    prefix = 0
    for x, y in zip(a, b):
        if x["address"] != y["address"]:
            break
        prefix += 1
    sa = collections.Counter(f["address"] for f in a)
    sb = collections.Counter(f["address"] for f in b)
    both = sum((sa & sb).values())
    return prefix, both, len(a) - both, len(b) - both


def trusted_missing(ours, theirs, key="trusted"):
    """minidump-stackwalk's trusted frames whose address is not in our stack. `trusted`: found
    by context, CFI or frame pointer on an unbroken chain of such frames from the context (a
    CFI step taken from a scanned frame is only as good as the scan); `method_trusted`: found by
    one of those methods, wherever it lies."""
    have = {f["address"] for f in ours}
    return [f for f in theirs if f[key] and f["address"] not in have]


def not_code(ntdbg, path, addresses):
    """The addresses among `addresses` that the dump's memory info list shows are not code
    (free, reserved, or committed without execute access): a frame there is refuted."""
    if not addresses:
        return set()
    commands = "; ".join(f"!address {a:#x}" for a in addresses)
    refuted = set()
    for address, r in zip(addresses, run_ntdbg(ntdbg, path, None, commands)):
        regions = (r.get("result") or {}).get("regions") or []
        if regions and regions[0].get("source") == "memory_info":
            region = regions[0]
            if region.get("state") != "MEM_COMMIT" or "EXECUTE" not in (region.get("protect") or ""):
                refuted.add(address)
    return refuted


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ntdbg", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "debug", "ntdbg"))
    ap.add_argument("--save")
    ap.add_argument("--before")
    ap.add_argument("--details", action="store_true", help="print differing threads frame by frame")
    ap.add_argument("--extra", action="append", default=[], help="another folder of dumps (fresh minidump-stackwalk runs)")
    args = ap.parse_args()
    before = json.load(open(args.before)) if args.before else None
    saved = {}
    totals = collections.Counter()
    found_by = collections.Counter()
    trust = collections.Counter()
    with tempfile.TemporaryDirectory() as work:
        print("| dump | threads | ntdbg frames | msw frames | same prefix | in both | only ntdbg | only msw "
              "| msw trusted, not ntdbg | of which not code | msw cfi/fp anywhere, not ntdbg |"
              + (" before frames | added | removed | found_by changed |" if before else ""))
        print("|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|---|" if before else ""))
        every = [(rel, path, False) for rel, path in dumps(work)]
        for extra in args.extra:
            every += [(os.path.join(os.path.basename(os.path.normpath(extra)), rel), path, True)
                      for rel, path in dumps(work, extra)]
        for rel, path, fresh in every:
            ours = ntdbg_threads(args.ntdbg, rel, path)
            saved[rel] = ours
            theirs, source = msw_threads(rel, path, work, fresh)
            row = collections.Counter()
            for tid, frames in ours.items():
                row["threads"] += 1
                row["ntdbg"] += len(frames)
                for f in frames:
                    found_by[f["found_by"]] += 1
                    trust[f["trust"]] += 1
                if theirs is not None and tid in theirs:
                    p, both, only_a, only_b = compare(frames, theirs[tid])
                    row["msw"] += len(theirs[tid])
                    row["prefix"] += p
                    row["both"] += both
                    row["only_ntdbg"] += only_a
                    row["only_msw"] += only_b
                    missing = trusted_missing(frames, theirs[tid])
                    row["msw_trusted_missing"] += len(missing)
                    refuted = not_code(args.ntdbg, path, [f["address"] for f in missing if f["where"] == "?"])
                    row["msw_not_code"] += sum(1 for f in missing if f["address"] in refuted)
                    row["msw_method_missing"] += len(trusted_missing(frames, theirs[tid], "method_trusted"))
                    if args.details and missing:
                        print(f"  {rel} thread {tid}: msw trusted, not ntdbg: {[(hex(f['address']), f['found_by'], f['where']) for f in missing]}")
                    if args.details and (only_a or only_b):
                        print(f"  {rel} thread {tid}: ntdbg {[(hex(f['address']), f['found_by'], f['trust']) for f in frames]}")
                        print(f"  {' ' * len(rel)}        msw   {[(hex(f['address']), f['found_by']) for f in theirs[tid]]}")
                if before is not None:
                    old = before.get(rel, {}).get(tid, [])
                    _, both, added, removed = compare(frames, old)
                    row["before"] += len(old)
                    row["added"] += added
                    row["removed"] += removed
                    olds = {f["address"]: f["found_by"] for f in old}
                    row["changed"] += sum(1 for f in frames if f["address"] in olds and olds[f["address"]] != f["found_by"])
                    if args.details and (added or removed):
                        print(f"  {rel} thread {tid}: before {[(hex(f['address']), f['found_by']) for f in old]}")
                        print(f"  {' ' * len(rel)}        after  {[(hex(f['address']), f['found_by'], f['trust']) for f in frames]}")
            totals.update(row)
            msw = "–" if theirs is None else f"{row['msw']} ({source})"
            line = (f"| {rel} | {row['threads']} | {row['ntdbg']} | {msw} | {row['prefix']} | {row['both']} "
                    f"| {row['only_ntdbg']} | {row['only_msw']} | {row['msw_trusted_missing']} "
                    f"| {row['msw_not_code']} | {row['msw_method_missing']} |")
            if before is not None:
                line += f" {row['before']} | {row['added']} | {row['removed']} | {row['changed']} |"
            print(line)
    t = totals
    line = (f"| **total** | {t['threads']} | {t['ntdbg']} | {t['msw']} | {t['prefix']} | {t['both']} "
            f"| {t['only_ntdbg']} | {t['only_msw']} | {t['msw_trusted_missing']} | {t['msw_not_code']} "
            f"| {t['msw_method_missing']} |")
    if before is not None:
        line += f" {t['before']} | {t['added']} | {t['removed']} | {t['changed']} |"
    print(line)
    print()
    print("found_by:", dict(found_by))
    print("trust:", dict(trust))
    if args.save:
        with open(args.save, "w") as f:
            json.dump(saved, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
