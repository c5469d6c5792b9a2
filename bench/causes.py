#!/usr/bin/env python3
"""How often `ntdbg analyze` states the documented cause of a crash dump, and how often it says
something the documented cause contradicts.

    python3 bench/causes.py [--ntdbg PATH] [--corpus NAME=DIR ...] [--no-samples] [--markdown]

Corpora: the shared `realworld/` corpus (found as ntdbg-testutil finds ../shared/testdata; each
dump's documented cause in its CAUSES.json), any
`--corpus NAME=DIR` laid out the same way (a CAUSES.json keyed by paths relative to DIR), and
the repository's own samples (`testdata/`, each documented by the mode of the generator that made
it, tools/crashgen/README.md), reported in a separate table.

Per documented cause kind, over the dumps of one corpus:
- dumps: how many; knowable: how many have a cause the dump (with the files beside it) can
  establish. A CAUSES.json entry says so in cause.knowable; the shared corpus predates that
  field, so KNOWABLE_SHARED below records it for those six, with the reason.
- stated: knowable dumps whose report states the documented cause by the rule of its kind
  (RULES: an inference of one of the listed kinds whose text satisfies the rule's check, and
  that contains every cause.key_facts string in its text or basis). recall = stated / knowable.
- wrong: dumps whose report makes a statement the documented cause contradicts: an inference of
  a kind the rule lists as contradicting it, or a text it lists.
- unsupported: statements no evidence in these dumps supports whatever the cause: "likely
  exploitable", "no debugger attached" (unless the basis cites PEB.BeingDebugged), an inference
  with an empty basis.
"""
import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Inference kinds that claim a memory-safety bug, a hardware fault or a heap problem: said of a
# crash that was deliberate, a NULL dereference or a check, each is contradicted.
MEMORY_CLAIMS = {"fill_pattern", "bit_flip", "heap_corruption", "buffer_overrun", "out_of_memory"}
CRASH_KINDS = MEMORY_CLAIMS | {
    "null_deref", "constant_address", "access_violation", "stack_overflow", "cpp_exception",
    "assertion", "runtime_check", "abort", "fail_fast", "deliberate", "breakpoint",
    "divide_by_zero", "raised_exception", "invalid_parameter",
}


def has_text(*words):
    return lambda report, inference: any(w in inference["text"] for w in words)


def always(report, inference):
    return True


def no_event(report):
    return report["event"]["type"] == "none"


# cause kind -> (kinds that state it, check on the stating inference, kinds that contradict it,
# texts that contradict it). A rule's check may look at the report too.
RULES = {
    "null_deref": ({"null_deref", "constant_address"}, has_text("null pointer", "NULL"),
                   MEMORY_CLAIMS | {"stack_overflow", "cpp_exception"}, []),
    "deliberate": ({"constant_address", "deliberate", "breakpoint"}, has_text("deliberate", "constant"),
                   MEMORY_CLAIMS, ["no debugger attached", "dangling"]),
    "use_after_free": ({"fill_pattern", "heap_corruption"}, has_text("use after free", "freed"),
                       {"constant_address", "deliberate", "null_deref", "bit_flip", "buffer_overrun"}, []),
    "abort_assert": ({"assertion", "runtime_check", "abort"}, always,
                     MEMORY_CLAIMS | {"null_deref", "constant_address"}, ["no debugger attached"]),
    "debugger_break": ({"debugger_break"}, always,
                       {"assertion", "runtime_check", "deliberate"}, ["no debugger attached"]),
    "manual_crash": ({"bugcheck"}, has_text("manual", "Manual"), MEMORY_CLAIMS, []),
    "exec_nx": ({"access_violation"}, has_text("non-executable"),
                {"null_deref", "constant_address", "heap_corruption"}, []),
    "no_crash": (set(), always, CRASH_KINDS, []),
    "stack_overflow": ({"stack_overflow"}, always, MEMORY_CLAIMS | {"null_deref"}, []),
    "heap_corruption": ({"heap_corruption"}, always,
                        {"constant_address", "deliberate", "null_deref", "bit_flip"}, []),
    "buffer_overrun": ({"buffer_overrun", "runtime_check", "fail_fast"}, has_text("overrun", "overflow"),
                       {"constant_address", "deliberate", "null_deref", "bit_flip"}, []),
    "out_of_memory": ({"out_of_memory"}, always,
                      {"constant_address", "deliberate", "null_deref", "bit_flip", "fill_pattern"}, ["dangling"]),
    "cpp_exception": ({"cpp_exception"}, always, MEMORY_CLAIMS | {"null_deref", "constant_address"}, []),
    "fail_fast": ({"fail_fast"}, always, {"constant_address", "null_deref", "bit_flip"}, []),
    "divide_by_zero": ({"divide_by_zero"}, always, MEMORY_CLAIMS, []),
    "raised_exception": ({"raised_exception"}, always, MEMORY_CLAIMS, []),
    "bit_flip": ({"bit_flip"}, always, {"constant_address", "deliberate"}, []),
    "wrong_thread": ({"context_thread"}, always, set(), []),
    "deadlock": ({"deadlock"}, always, CRASH_KINDS, []),
    "hang": ({"hang", "deadlock"}, always, CRASH_KINDS, []),
    "unknown": (set(), always, set(), []),
}

# The shared corpus's CAUSES.json has no `knowable` field: what the dump shows of each cause.
KNOWABLE_SHARED = {
    "KindTis+DumpAnalysisMCP/examples/cpp-crash-sample-2/CppConsoleApplication.dmp":
        (True, "the int 3 follows a call to the debug CRT's report function in the same function"),
    "KindTis+DumpAnalysisMCP/examples/cpp-crash-sample-3/CppConsoleApplication.dmp":
        (True, "the pointer holds the MSVC debug heap's freed-memory fill 0xdddddddd"),
    "KindTis+DumpAnalysisMCP/examples/cpp-crash-sample-4/CppConsoleApplication.dmp":
        (True, "a read through NULL (the lifetime race behind it is not in the dump)"),
    "getsentry+sentry-native/tests/fixtures/minidump.dmp":
        (False, "the constant (void *)1 is in the caller's code, which neither the dump nor any file here holds; the dump shows a near-NULL write in memset"),
    "BugSplat-Git+BugSplatCrashHandler/testdata/myConsoleCrasher.dmp":
        (True, "the faulting instruction encodes the address 0"),
    "BugSplat-Git+bugsplat-js-api-client/spec/files/native/myConsoleCrasher.zip.extracted/myConsoleCrasherIAK17P61.dmp":
        (True, "the faulting instruction encodes the address 0"),
}

# Wine's PE DLLs (Debian's wine64 package), the system images the samples ran with.
WINE_DLLS = "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows"

# The repository's own samples: the cause each generator mode makes (tools/crashgen/README.md).
SAMPLES = {
    "crashy-x64-null.dmp": ("null_deref", []),
    "crashy-x64-divzero.dmp": ("divide_by_zero", []),
    "crashy-x64-stack.dmp": ("stack_overflow", []),
    "crashy-x64-breakpoint.dmp": ("deliberate", []),
    "crashy-x64-raise.dmp": ("raised_exception", ["0xe0001234"]),
    "crashy-x64-thread.dmp": ("null_deref", []),
    "x86/crashy-x86-null.dmp": ("null_deref", []),
    "x86/crashy-x86-divzero.dmp": ("divide_by_zero", []),
    "x86/crashy-x86-stack.dmp": ("stack_overflow", []),
    "x86/crashy-x86-raise.dmp": ("raised_exception", ["0xe0001234"]),
    "x86/crashy-x86-thread.dmp": ("null_deref", []),
    "faults/heap_uaf.dmp": ("heap_corruption", []),
    "faults/heap_overflow.dmp": ("heap_corruption", []),
    "faults/freed_pointer.dmp": ("use_after_free", ["0xfeeefeee"]),
    "faults/fastfail_cookie.dmp": ("fail_fast", ["FAST_FAIL_STACK_COOKIE_CHECK_FAILURE"]),
    "faults/constant_address.dmp": ("deliberate", ["0x3e3c9a10"]),
    "faults/leaf_null_write.dmp": ("deliberate", []),
    "faults/assertion.dmp": ("abort_assert", ["x > 0"]),
    "faults/deliberate_trap.dmp": ("deliberate", ["0xdead0001"]),
    "faults/stack_cycle.dmp": ("stack_overflow", ["ping", "pong"]),
    "faults/context_thread.dmp": ("wrong_thread", []),
    "faults/bit_flip.dmp": ("bit_flip", []),
    "cxx/msvc_runtime_error.dmp": ("cpp_exception", ["std::runtime_error"]),
    "cxx/msvc_int.dmp": ("cpp_exception", ["int"]),
    "cxx/msvc_terminate.dmp": ("cpp_exception", ["std::runtime_error"]),
    "cxx/itanium_runtime_error.dmp": ("cpp_exception", ["std::runtime_error"]),
    "cxx/itanium_custom.dmp": ("cpp_exception", ["app::config_error"]),
    "hang/deadlock.dmp": ("deadlock", []),
    "hang/deadlock3.dmp": ("deadlock", []),
    "hang/hang.dmp": ("hang", []),
    "hang/srw.dmp": ("hang", []),
    "causes/page_overrun.dmp": ("buffer_overrun", []),
    "causes/commit_exhaustion.dmp": ("out_of_memory", []),
    "causes/poison_constant.dmp": ("deliberate", ["0xfefefefefefefefe"]),
    "causes/ascii_constant.dmp": ("deliberate", ["0x41414141"]),
    "causes/heap_header.dmp": ("heap_corruption", []),
    "causes/assert_message.dmp": ("abort_assert", ["players > 0"]),
    "causes/debugbreak.dmp": ("deliberate", ["DebugBreak"]),
    "causes/stack_protector.dmp": ("buffer_overrun", ["copy_name"]),
}


def analyze(ntdbg, path, extra_symbols):
    """The report of one dump (symbols beside it and in `extra_symbols`, offline), or None when
    analyze fails."""
    env = dict(os.environ, NTDBG_OFFLINE="1")
    symbols = ";".join([os.path.dirname(path)] + extra_symbols)
    r = subprocess.run([ntdbg, "analyze", "--json", "--symbols", symbols, path],
                       capture_output=True, text=True, env=env, timeout=600)
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        return None


def judge(report, kind, key_facts):
    """(stated, contradicted, unsupported) for one report against its documented cause."""
    states, check, contradicting, contradicting_texts = RULES.get(kind, RULES["unknown"])
    inferences = report["inferences"] if report else []
    facts_in = lambda i: all(f.lower() in (i["text"] + " " + i["basis"]).lower() for f in key_facts)
    if kind == "no_crash":
        stated = report is not None and no_event(report) and not any(i["kind"] in CRASH_KINDS for i in inferences)
    else:
        stated = any(i["kind"] in states and check(report, i) and facts_in(i) for i in inferences)
    contradicted = [i for i in inferences
                    if i["kind"] in contradicting or any(t in i["text"] for t in contradicting_texts)]
    unsupported = [i for i in inferences
                   if "exploitable" in i["text"]
                   or ("no debugger attached" in i["text"] and "BeingDebugged" not in i["basis"])
                   or not i["basis"].strip()]
    return stated, contradicted, unsupported


def corpus_cases(directory):
    """(path, cause kind, key facts, knowable) for every entry of DIR/CAUSES.json."""
    with open(os.path.join(directory, "CAUSES.json")) as f:
        causes = json.load(f)
    for rel, entry in sorted(causes.items()):
        if rel.startswith("_"):
            continue
        c = entry["cause"]
        knowable = c.get("knowable")
        if knowable is None:
            knowable = KNOWABLE_SHARED.get(rel, (False, ""))[0]
        yield os.path.join(directory, rel), rel, c["kind"], c.get("key_facts", []), knowable, []


def shared_corpus():
    """`realworld/` of the shared test data: $NTDBG_TESTDATA, else `shared/testdata` in the
    nearest ancestor of the repository that has one (as ntdbg-testutil finds it)."""
    roots = [os.environ["NTDBG_TESTDATA"]] if os.environ.get("NTDBG_TESTDATA") else []
    at = REPO
    while True:
        roots.append(os.path.join(at, "shared", "testdata"))
        parent = os.path.dirname(at)
        if parent == at:
            break
        at = parent
    for root in roots:
        if os.path.exists(os.path.join(root, "realworld", "CAUSES.json")):
            return os.path.join(root, "realworld")
    return None


def sample_cases():
    # The samples ran under Wine: its DLLs are the system images beside those dumps (as the
    # hang tests use them), when installed.
    wine = [WINE_DLLS] if os.path.exists(os.path.join(WINE_DLLS, "ntdll.dll")) else []
    for rel, (kind, facts) in sorted(SAMPLES.items()):
        path = os.path.join(REPO, "testdata", rel)
        if os.path.exists(path):
            yield path, rel, kind, facts, True, wine


def run(ntdbg, cases, verbose):
    cases = list(cases)
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(lambda c: analyze(ntdbg, c[0], c[5]), cases))
    rows = {}
    failures = []
    for (path, rel, kind, facts, knowable, _), report in zip(cases, reports):
        stated, contradicted, unsupported = judge(report, kind, facts)
        row = rows.setdefault(kind, {"dumps": 0, "knowable": 0, "stated": 0, "wrong": 0, "unsupported": 0})
        row["dumps"] += 1
        row["knowable"] += knowable
        row["stated"] += knowable and stated
        row["wrong"] += bool(contradicted)
        row["unsupported"] += bool(unsupported)
        if (knowable and not stated) or contradicted or unsupported:
            failures.append((rel, kind, knowable, stated, contradicted, unsupported, report))
    if verbose:
        for rel, kind, knowable, stated, contradicted, unsupported, report in failures:
            print(f"  {rel} [{kind}]" + (" not stated" if knowable and not stated else ""), file=sys.stderr)
            for i in contradicted:
                print(f"    contradicted: {i['kind']}: {i['text'][:160]}", file=sys.stderr)
            for i in unsupported:
                print(f"    unsupported: {i['kind']}: {i['text'][:160]}", file=sys.stderr)
            if report and knowable and not stated:
                for i in report["inferences"]:
                    print(f"    said: {i['kind']}: {i['text'][:160]}", file=sys.stderr)
    return rows


def table(name, rows, markdown):
    total = {k: sum(r[k] for r in rows.values()) for k in ("dumps", "knowable", "stated", "wrong", "unsupported")}
    lines = []
    header = ["cause kind", "dumps", "knowable", "stated", "recall", "wrong", "unsupported"]
    body = []
    for kind in sorted(rows) + ["**all**" if markdown else "ALL"]:
        r = total if kind in ("**all**", "ALL") else rows[kind]
        recall = f"{100 * r['stated'] / r['knowable']:.0f}%" if r["knowable"] else "-"
        body.append([kind, r["dumps"], r["knowable"], r["stated"], recall, r["wrong"], r["unsupported"]])
    if markdown:
        lines.append(f"{name}\n")
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(str(c) for c in b) + " |" for b in body]
    else:
        lines.append(name)
        widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
        for b in [header] + body:
            lines.append("  ".join(str(c).ljust(w) for c, w in zip(b, widths)))
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ntdbg", default=os.path.join(REPO, "target", "debug", "ntdbg"))
    p.add_argument("--corpus", action="append", default=[], metavar="NAME=DIR",
                   help="another corpus laid out like ../shared/testdata/realworld")
    p.add_argument("--no-samples", action="store_true", help="leave out the repository's own samples")
    p.add_argument("--markdown", action="store_true", help="Markdown tables (for BENCHMARKS.md)")
    p.add_argument("--verbose", action="store_true", help="list every miss and wrong statement on stderr")
    args = p.parse_args()
    corpora = []
    shared = shared_corpus()
    if shared:
        corpora.append(("shared real-world corpus (../shared/testdata/realworld)", corpus_cases(shared)))
    for spec in args.corpus:
        name, _, directory = spec.partition("=")
        corpora.append((f"{name} ({directory})", corpus_cases(directory)))
    if not args.no_samples:
        corpora.append(("the repository's own samples (testdata/)", sample_cases()))
    for name, cases in corpora:
        if args.verbose:
            print(f"== {name}", file=sys.stderr)
        print(table(name, run(args.ntdbg, cases, args.verbose), args.markdown))
        print()


if __name__ == "__main__":
    main()
