#!/usr/bin/env python3
"""Writes the C++ sources of a large generated Windows program for the big-PDB benchmark.

Usage: gen.py OUT_DIR FUNCTIONS [FILES]

Each file has a chain of DEPTH __forceinline helpers (one per source line, so every inline
level has its own line) and FUNCTIONS/FILES non-inlined functions, each with its own
struct type, calling into the chain: deep inlining, many functions, many types. main.cpp
holds the entry point, which calls every function (so the linker keeps them all).
"""
import os
import sys

DEPTH = 8
FIELDS = 24
FIELD_TYPES = ["int", "long long", "double", "short", "unsigned", "float", "char*", "void*"]


def unit(k, first, count):
    out = [f"// generated: unit {k}", "extern volatile int sink;", f"namespace n{k} {{"]
    out.append(f"__forceinline int g0(int x) {{ return x + sink; }}")
    for d in range(1, DEPTH + 1):
        out.append(
            f"__forceinline int g{d}(int x) {{ int y = x * {d + 2} + sink;\n"
            f"  return g{d - 1}(y) ^ (y >> {d % 5 + 1}); }}"
        )
    out.append("}")
    for j in range(first, first + count):
        fields = " ".join(f"{FIELD_TYPES[(j + m) % len(FIELD_TYPES)]} m{m};" for m in range(FIELDS))
        out.append(f"struct T{j} {{ int a; T{j} *next; char c[{j % 13 + 1}]; {fields} }};")
        out.append(
            f"__declspec(noinline) int f{j}(int x) {{\n"
            f"  T{j} t; t.a = x; t.next = &t; t.c[0] = (char)x;\n"
            f"  int r = n{k}::g{DEPTH}(x + {j});\n"
            f"  if (x & 1) r += n{k}::g{DEPTH // 2}(r);\n"
            f"  return r + t.next->a + t.c[0];\n"
            f"}}"
        )
    return "\n".join(out) + "\n"


def main():
    out_dir, functions = sys.argv[1], int(sys.argv[2])
    files = int(sys.argv[3]) if len(sys.argv) > 3 else max(1, functions // 2000)
    os.makedirs(out_dir, exist_ok=True)
    per = -(-functions // files)
    decls, calls = [], []
    for k in range(files):
        first = k * per
        count = max(0, min(per, functions - first))
        with open(os.path.join(out_dir, f"u{k}.cpp"), "w") as f:
            f.write(unit(k, first, count))
        for j in range(first, first + count):
            decls.append(f"int f{j}(int);")
            calls.append(f"  r += f{j}(r);")
    with open(os.path.join(out_dir, "main.cpp"), "w") as f:
        f.write("volatile int sink;\n" + "\n".join(decls) + "\n")
        f.write('extern "C" int entry(void) {\n  int r = sink;\n')
        f.write("\n".join(calls) + "\n  return r;\n}\n")


main()
