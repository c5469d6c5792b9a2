#!/usr/bin/env python3
"""Check the minidumps made by tools/crashgen/generate.sh.

Usage: check_dumps.py [--verbose] DUMP...

For every dump prints: size, exception code, exception address, thread count,
module count and the crashing thread id (and whether that thread is the first
thread in the thread list, i.e. normally the main thread).

A dump named crashy-<arch>-<mode>.dmp is also checked against the exception
code that mode must produce (and, for mode "thread", that the crashing thread
is not the main thread). Exits non-zero if any check fails.

Only the standard library is used (struct). Wine's dbghelp writes unaligned
streams and an extra stream of type 0xFFF0; both are handled.
"""
import os
import re
import struct
import sys

MDMP_SIGNATURE = b"MDMP"

THREAD_LIST_STREAM = 3
MODULE_LIST_STREAM = 4
MEMORY_LIST_STREAM = 5
EXCEPTION_STREAM = 6
SYSTEM_INFO_STREAM = 7
MEMORY64_LIST_STREAM = 9

EXPECTED_CODES = {
    "null": 0xC0000005,
    "divzero": 0xC0000094,
    "stack": 0xC00000FD,
    "breakpoint": 0x80000003,
    "raise": 0xE0001234,
    "thread": 0xC0000005,
}

ARCH_NAMES = {0: "x86", 9: "amd64", 5: "arm", 12: "arm64"}


class DumpError(Exception):
    pass


def u32(data, off):
    if off + 4 > len(data):
        raise DumpError("read of 4 bytes at 0x%x is past the end (0x%x)" % (off, len(data)))
    return struct.unpack_from("<I", data, off)[0]


def read_utf16_string(data, rva):
    """MINIDUMP_STRING: ULONG32 length in bytes, then UTF-16LE."""
    length = u32(data, rva)
    raw = data[rva + 4 : rva + 4 + length]
    return raw.decode("utf-16-le", errors="replace")


def parse(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != MDMP_SIGNATURE:
        raise DumpError("does not start with MDMP (got %r)" % data[:4])
    (_sig, version, nstreams, dir_rva, _checksum, timestamp, flags) = struct.unpack_from(
        "<4sIIIIIQ", data, 0
    )
    streams = {}
    for i in range(nstreams):
        stype, size, rva = struct.unpack_from("<III", data, dir_rva + 12 * i)
        if stype == 0:  # UnusedStream (Wine pads the directory with these)
            continue
        if rva + size > len(data):
            raise DumpError("stream %d (type 0x%x) runs past the end of the file" % (i, stype))
        streams.setdefault(stype, (rva, size))

    info = {
        "path": path,
        "size": len(data),
        "version": version,
        "flags": flags,
        "timestamp": timestamp,
        "stream_types": sorted(streams),
    }

    if SYSTEM_INFO_STREAM in streams:
        rva, _ = streams[SYSTEM_INFO_STREAM]
        arch = struct.unpack_from("<H", data, rva)[0]
        major, minor, build = struct.unpack_from("<III", data, rva + 8)
        info["arch"] = ARCH_NAMES.get(arch, "0x%x" % arch)
        info["os"] = "%d.%d.%d" % (major, minor, build)

    threads = []
    if THREAD_LIST_STREAM in streams:
        rva, _ = streams[THREAD_LIST_STREAM]
        count = u32(data, rva)
        for i in range(count):
            # MINIDUMP_THREAD: 48 bytes
            base = rva + 4 + 48 * i
            tid, _suspend, _prio_class, _prio, teb = struct.unpack_from("<IIIIQ", data, base)
            stack_start, stack_size, stack_rva = struct.unpack_from("<QII", data, base + 24)
            ctx_size, ctx_rva = struct.unpack_from("<II", data, base + 40)
            threads.append(
                {
                    "id": tid,
                    "teb": teb,
                    "stack_start": stack_start,
                    "stack_size": stack_size,
                    "context_size": ctx_size,
                }
            )
    info["threads"] = threads

    modules = []
    if MODULE_LIST_STREAM in streams:
        rva, _ = streams[MODULE_LIST_STREAM]
        count = u32(data, rva)
        for i in range(count):
            # MINIDUMP_MODULE: 108 bytes
            base = rva + 4 + 108 * i
            image_base, image_size, checksum, tds, name_rva = struct.unpack_from(
                "<QIIII", data, base
            )
            cv_size, cv_rva = struct.unpack_from("<II", data, base + 76)
            modules.append(
                {
                    "base": image_base,
                    "size": image_size,
                    "timestamp": tds,
                    "name": read_utf16_string(data, name_rva),
                    "cv_size": cv_size,
                }
            )
    info["modules"] = modules

    memory = []
    if MEMORY_LIST_STREAM in streams:
        rva, _ = streams[MEMORY_LIST_STREAM]
        count = u32(data, rva)
        for i in range(count):
            start, size, mrva = struct.unpack_from("<QII", data, rva + 4 + 16 * i)
            memory.append((start, size))
    info["memory"] = memory

    if EXCEPTION_STREAM in streams:
        rva, _ = streams[EXCEPTION_STREAM]
        # MINIDUMP_EXCEPTION_STREAM: ThreadId, __alignment, MINIDUMP_EXCEPTION, context loc
        tid = u32(data, rva)
        code, eflags, _nested, address, nparams = struct.unpack_from("<IIQQI", data, rva + 8)
        params = struct.unpack_from("<15Q", data, rva + 8 + 32)[: min(nparams, 15)]
        ctx_size, ctx_rva = struct.unpack_from("<II", data, rva + 8 + 152)
        info["exception"] = {
            "thread_id": tid,
            "code": code,
            "flags": eflags,
            "address": address,
            "params": list(params),
            "context_size": ctx_size,
            "module": None,
        }
        for m in modules:
            if m["base"] <= address < m["base"] + m["size"]:
                name = m["name"].replace("/", "\\").split("\\")[-1]
                info["exception"]["module"] = name
                info["exception"]["module_offset"] = address - m["base"]
    return info


def pe_info(path):
    """TimeDateStamp, SizeOfImage, machine and the CodeView (RSDS) record of a PE file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] != b"MZ":
        raise DumpError("%s: not a PE file" % path)
    pe = u32(data, 0x3C)
    if data[pe : pe + 4] != b"PE\0\0":
        raise DumpError("%s: no PE signature" % path)
    machine, nsect, tds = struct.unpack_from("<HHI", data, pe + 4)
    opt_size = struct.unpack_from("<H", data, pe + 20)[0]
    opt = pe + 24
    magic = struct.unpack_from("<H", data, opt)[0]
    size_of_image = u32(data, opt + 56)
    ddir = opt + (112 if magic == 0x20B else 96)
    debug_rva, debug_size = struct.unpack_from("<II", data, ddir + 8 * 6)
    sections = []
    for i in range(nsect):
        sh = opt + opt_size + 40 * i
        vsize, vaddr, rawsize, rawptr = struct.unpack_from("<IIII", data, sh + 8)
        sections.append((vaddr, max(vsize, rawsize), rawptr))

    def rva_to_off(rva):
        for vaddr, size, rawptr in sections:
            if vaddr <= rva < vaddr + size:
                return rva - vaddr + rawptr
        raise DumpError("%s: RVA 0x%x is in no section" % (path, rva))

    info = {
        "machine": machine,
        "timestamp": tds,
        "size_of_image": size_of_image,
        "pe32plus": magic == 0x20B,
    }
    if debug_rva:
        off = rva_to_off(debug_rva)
        for i in range(debug_size // 28):
            (_ch, _tds, _maj, _min, dtype, dsize, _addr, rawptr) = struct.unpack_from(
                "<IIHHIIII", data, off + 28 * i
            )
            if dtype == 2 and data[rawptr : rawptr + 4] == b"RSDS":
                guid = data[rawptr + 4 : rawptr + 20]
                age = u32(data, rawptr + 20)
                name = data[rawptr + 24 : rawptr + dsize].split(b"\0")[0]
                info["pdb_guid"] = guid
                info["pdb_age"] = age
                info["pdb_path"] = name.decode("utf-8", errors="replace")
    return info


def pdb_info(path):
    """GUID and age from a PDB (MSF 7.00): PDB info stream 1, DBI stream 3."""
    with open(path, "rb") as f:
        data = f.read()
    magic = b"Microsoft C/C++ MSF 7.00\r\n\x1aDS\0\0\0"
    if not data.startswith(magic):
        raise DumpError("%s: not an MSF 7.00 PDB" % path)
    block_size, _fpm, _nblocks, dir_bytes, _unk, block_map = struct.unpack_from(
        "<IIIIII", data, len(magic)
    )
    ndir_blocks = (dir_bytes + block_size - 1) // block_size
    dir_block_ids = struct.unpack_from("<%dI" % ndir_blocks, data, block_map * block_size)
    directory = b"".join(
        data[b * block_size : (b + 1) * block_size] for b in dir_block_ids
    )[:dir_bytes]
    nstreams = u32(directory, 0)
    sizes = struct.unpack_from("<%dI" % nstreams, directory, 4)
    pos = 4 + 4 * nstreams
    streams = []
    for size in sizes:
        if size == 0xFFFFFFFF:
            size = 0
        n = (size + block_size - 1) // block_size
        ids = struct.unpack_from("<%dI" % n, directory, pos)
        pos += 4 * n
        streams.append(
            b"".join(data[b * block_size : (b + 1) * block_size] for b in ids)[:size]
        )
    _ver, _sig, age = struct.unpack_from("<III", streams[1], 0)
    guid = streams[1][12:28]
    dbi_age = u32(streams[3], 8) if len(streams) > 3 and len(streams[3]) >= 12 else None
    return {"guid": guid, "age": age, "dbi_age": dbi_age}


def guid_text(guid):
    d1, d2, d3 = struct.unpack_from("<IHH", guid, 0)
    return "%08X%04X%04X%s" % (d1, d2, d3, guid[8:16].hex().upper())


def describe_binaries(directory):
    """Facts about crashy.exe / crashy.pdb next to the dumps, or None."""
    exe = os.path.join(directory, "crashy.exe")
    pdb = os.path.join(directory, "crashy.pdb")
    if not os.path.exists(exe):
        return None, []
    lines = []
    problems = []
    pe = pe_info(exe)
    lines.append("%s" % exe)
    lines.append("  size:               %d bytes" % os.path.getsize(exe))
    lines.append("  machine:            0x%04x (%s)" % (
        pe["machine"], "PE32+" if pe["pe32plus"] else "PE32"))
    lines.append("  TimeDateStamp:      0x%08x" % pe["timestamp"])
    lines.append("  SizeOfImage:        0x%x" % pe["size_of_image"])
    if "pdb_guid" in pe:
        lines.append("  CodeView RSDS:      guid %s age %d path %s" % (
            guid_text(pe["pdb_guid"]), pe["pdb_age"], pe["pdb_path"]))
        lines.append("  debug id:           %s%X" % (guid_text(pe["pdb_guid"]), pe["pdb_age"]))
    else:
        problems.append("%s: no CodeView RSDS record" % exe)
    if os.path.exists(pdb):
        pi = pdb_info(pdb)
        lines.append("%s" % pdb)
        lines.append("  size:               %d bytes" % os.path.getsize(pdb))
        lines.append("  guid / age:         %s / %d (DBI age %s)" % (
            guid_text(pi["guid"]), pi["age"], pi["dbi_age"]))
        if "pdb_guid" in pe and (pi["guid"] != pe["pdb_guid"] or pi["age"] != pe["pdb_age"]):
            problems.append("crashy.pdb does not match crashy.exe's RSDS record")
        else:
            lines.append("  matches crashy.exe: yes")
    return {"exe": pe, "lines": lines}, problems


def mode_of(path):
    m = re.match(r"crashy-[^-]+-([a-z]+)\.dmp$", os.path.basename(path))
    return m.group(1) if m else None


def check(info):
    """Returns a list of problems (empty if the dump is as expected)."""
    problems = []
    exc = info.get("exception")
    if exc is None:
        return ["no exception stream"]
    if not info["threads"]:
        problems.append("no threads")
    if not info["modules"]:
        problems.append("no modules")
    tids = [t["id"] for t in info["threads"]]
    if exc["thread_id"] not in tids:
        problems.append("crashing thread %d is not in the thread list %s" % (exc["thread_id"], tids))
    if exc.get("module") is None:
        problems.append("exception address 0x%x is in no listed module" % exc["address"])
    mode = mode_of(info["path"])
    if mode is not None:
        if mode == "raise":
            want_mod = None  # RaiseException: address inside kernelbase.dll
        else:
            want_mod = "crashy.exe"
        if want_mod and (exc.get("module") or "").lower() != want_mod:
            problems.append("exception address is in %s, expected %s" % (exc.get("module"), want_mod))
        if mode == "thread" and len(tids) < 2:
            problems.append("mode thread: fewer than 2 threads")
        want = EXPECTED_CODES.get(mode)
        if want is None:
            problems.append("unknown mode %r" % mode)
        elif exc["code"] != want:
            problems.append("exception code 0x%08x, expected 0x%08x" % (exc["code"], want))
        if mode == "thread" and tids and exc["thread_id"] == tids[0]:
            problems.append("mode thread: crashing thread is the main (first) thread")
        if mode == "raise" and exc["params"] != [1, 2, 3]:
            problems.append("mode raise: parameters %s, expected [1, 2, 3]" % exc["params"])
    return problems


def describe(info, verbose):
    exc = info.get("exception") or {}
    tids = [t["id"] for t in info["threads"]]
    crash_tid = exc.get("thread_id")
    if crash_tid is None:
        where = "-"
    elif tids and crash_tid == tids[0]:
        where = "first/main thread"
    else:
        where = "non-main thread"
    lines = [
        "%s" % info["path"],
        "  size:               %d bytes" % info["size"],
        "  arch / os:          %s / %s" % (info.get("arch", "?"), info.get("os", "?")),
        "  exception code:     0x%08x" % exc.get("code", 0) if exc else "  exception code:     (none)",
        "  exception address:  0x%016x" % exc.get("address", 0) if exc else "",
        "  exception params:   [%s]" % ", ".join("0x%x" % p for p in exc.get("params", [])),
        "  faulting module:    %s+0x%x" % (exc["module"], exc["module_offset"])
        if exc.get("module") else "  faulting module:    (none)",
        "  thread count:       %d (ids %s)" % (len(tids), ", ".join(str(t) for t in tids)),
        "  module count:       %d" % len(info["modules"]),
        "  crashing thread id: %s (%s)" % (crash_tid, where),
    ]
    if verbose:
        lines.append("  streams:            %s" % ", ".join("0x%x" % s for s in info["stream_types"]))
        lines.append("  memory ranges:      %d, %d bytes" % (
            len(info["memory"]), sum(s for _, s in info["memory"])))
        for t in info["threads"]:
            lines.append("    thread %5d stack 0x%x + 0x%x" % (t["id"], t["stack_start"], t["stack_size"]))
        for m in info["modules"]:
            lines.append("    module 0x%016x size 0x%x ts 0x%08x cv %d %s" % (
                m["base"], m["size"], m["timestamp"], m["cv_size"], m["name"]))
    return "\n".join(l for l in lines if l)


def check_against_exe(info, binaries):
    """The dump's crashy.exe module must be the crashy.exe next to it."""
    if binaries is None:
        return []
    pe = binaries["exe"]
    mods = [m for m in info["modules"]
            if m["name"].replace("/", "\\").split("\\")[-1].lower() == "crashy.exe"]
    if not mods:
        return ["no crashy.exe module in the dump"]
    m = mods[0]
    if m["timestamp"] != pe["timestamp"] or m["size"] != pe["size_of_image"]:
        return ["crashy.exe module (ts 0x%08x, size 0x%x) does not match crashy.exe here "
                "(ts 0x%08x, size 0x%x)" % (m["timestamp"], m["size"], pe["timestamp"],
                                            pe["size_of_image"])]
    return []


def main(argv):
    verbose = False
    paths = []
    for a in argv[1:]:
        if a in ("-v", "--verbose"):
            verbose = True
        else:
            paths.append(a)
    if not paths:
        print("usage: check_dumps.py [--verbose] DUMP...", file=sys.stderr)
        return 2
    failed = 0
    binaries_by_dir = {}
    summary = []
    for path in paths:
        directory = os.path.dirname(os.path.abspath(path))
        if directory not in binaries_by_dir:
            try:
                binaries, problems = describe_binaries(directory)
            except (OSError, DumpError, struct.error, IndexError) as e:
                binaries, problems = None, ["%s: %s" % (directory, e)]
            binaries_by_dir[directory] = binaries
            if binaries is not None:
                print("\n".join(binaries["lines"]))
            for p in problems:
                print("  FAIL: %s" % p)
            failed += bool(problems)
        try:
            info = parse(path)
        except (OSError, DumpError, struct.error) as e:
            print("%s\n  FAIL: %s" % (path, e))
            failed += 1
            summary.append((path, None))
            continue
        print(describe(info, verbose))
        problems = check(info) + check_against_exe(info, binaries_by_dir[directory])
        if problems:
            failed += 1
            for p in problems:
                print("  FAIL: %s" % p)
        else:
            print("  OK")
        summary.append((path, info))

    print()
    print("| dump | bytes | exception | address | module+offset | threads | modules | crashing thread |")
    print("|---|---|---|---|---|---|---|---|")
    for path, info in summary:
        if info is None:
            print("| %s | - | unreadable | | | | | |" % os.path.basename(path))
            continue
        exc = info.get("exception") or {}
        tids = [t["id"] for t in info["threads"]]
        crash = exc.get("thread_id")
        print("| %s | %d | 0x%08x | 0x%x | %s | %d | %d | %s (%s) |" % (
            os.path.basename(path), info["size"], exc.get("code", 0), exc.get("address", 0),
            "%s+0x%x" % (exc["module"], exc["module_offset"]) if exc.get("module") else "-",
            len(tids), len(info["modules"]), crash,
            "main" if tids and crash == tids[0] else "other"))
    print()
    print("%d dump(s) checked, %d problem(s)" % (len(paths), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
