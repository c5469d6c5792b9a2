/*
 * causes.c - crashes whose cause ntdbg must name from evidence any dump of the
 * kind carries (the instruction, the code before it, the call chain through
 * the import table, the address-space layout, commit facts, text in
 * registers), not from values only this program would produce. Each mode is
 * one of the cases of issue 32; see the "causes.exe" section of
 * tools/crashgen/README.md.
 *
 * Wine's MiniDumpWriteDump writes no MemoryInfoList, SystemMemoryInfo or
 * ProcessVmCounters stream, which Windows writes into every minidump; the
 * modes that need them add them as user streams built from what Windows
 * itself reports to the program (VirtualQuery, GetPerformanceInfo,
 * GetProcessMemoryInfo, the job's limit), in the layouts of minidumpapiset.h.
 */
// crashgen-modes: page_overrun commit_exhaustion poison_constant ascii_constant heap_header assert_message debugbreak stack_protector
// crashgen-flags: -O1 -fstack-protector-strong
// crashgen-libs: -lpsapi -l:libssp.a
#include "crashgen.h"

#include <psapi.h>
#include <stdint.h>
#include <stdlib.h>

/* Keeps a value opaque to the optimiser without any memory traffic. */
#define HIDE(v) __asm__ volatile("" : "+r"(v))

/* ---- user streams: what Windows' MiniDumpWriteDump writes and Wine's
 * does not ---- */

enum { MAX_REGIONS = 4096 };

/* MINIDUMP_MEMORY_INFO_LIST: a 16-byte header and 48-byte entries. */
struct memory_info_list {
    ULONG size_of_header, size_of_entry;
    ULONG64 count;
    MINIDUMP_MEMORY_INFO entries[MAX_REGIONS];
};
static struct memory_info_list memory_info;
/* MINIDUMP_SYSTEM_MEMORY_INFO_1 (492 bytes) and MINIDUMP_PROCESS_VM_COUNTERS_2
 * (152 bytes), 4-byte packed; only the fields ntdbg reads are filled. */
static unsigned char system_memory[492];
static unsigned char vm_counters[152];
static MINIDUMP_USER_STREAM user_streams[3];
static MINIDUMP_USER_STREAM_INFORMATION user_stream_info;

static void put32(unsigned char *b, size_t at, ULONG v) { memcpy(b + at, &v, 4); }
static void put16(unsigned char *b, size_t at, USHORT v) { memcpy(b + at, &v, 2); }
static void put64(unsigned char *b, size_t at, ULONG64 v) { memcpy(b + at, &v, 8); }

/* The address-space layout as VirtualQuery sees it. */
static void fill_memory_info(void)
{
    MEMORY_BASIC_INFORMATION m;
    uintptr_t at = 0x10000;
    memory_info.size_of_header = 16;
    memory_info.size_of_entry = sizeof(MINIDUMP_MEMORY_INFO);
    memory_info.count = 0;
    while (memory_info.count < MAX_REGIONS && VirtualQuery((void *)at, &m, sizeof m) == sizeof m) {
        MINIDUMP_MEMORY_INFO *e = &memory_info.entries[memory_info.count++];
        e->BaseAddress = (uintptr_t)m.BaseAddress;
        e->AllocationBase = (uintptr_t)m.AllocationBase;
        e->AllocationProtect = m.AllocationProtect;
        e->RegionSize = m.RegionSize;
        e->State = m.State;
        e->Protect = m.Protect;
        e->Type = m.Type;
        if ((uintptr_t)m.BaseAddress + m.RegionSize <= at)
            break;
        at = (uintptr_t)m.BaseAddress + m.RegionSize;
    }
}

/* System commit from GetPerformanceInfo, process commit from
 * GetProcessMemoryInfo (or, where that reports none, as under Wine, the
 * `committed` bytes this program committed itself), and the job's commit
 * limit (0: none). */
static void fill_commit(ULONG64 committed, ULONG64 job_limit)
{
    PERFORMANCE_INFORMATION perf;
    PROCESS_MEMORY_COUNTERS_EX pmc;
    const size_t basic_perf = 116;
    memset(&perf, 0, sizeof perf);
    memset(&pmc, 0, sizeof pmc);
    perf.cb = sizeof perf;
    pmc.cb = sizeof pmc;
    GetPerformanceInfo(&perf, sizeof perf);
    put16(system_memory, 0, 1); /* revision */
    put16(system_memory, 2, 0xf);
    put32(system_memory, 4 + 4, (ULONG)perf.PageSize);
    put64(system_memory, basic_perf + 8, perf.CommitTotal);
    put64(system_memory, basic_perf + 16, perf.CommitLimit);
    put64(system_memory, basic_perf + 24, perf.CommitPeak);
    GetProcessMemoryInfo(GetCurrentProcess(), (PROCESS_MEMORY_COUNTERS *)&pmc, sizeof pmc);
    if (pmc.PrivateUsage < committed)
        pmc.PrivateUsage = committed;
    if (pmc.PeakPagefileUsage < pmc.PrivateUsage)
        pmc.PeakPagefileUsage = pmc.PrivateUsage;
    put16(vm_counters, 0, 2); /* revision */
    put16(vm_counters, 2, 0x4 | (job_limit ? 0x10 : 0)); /* EX, JOB */
    put32(vm_counters, 4, pmc.PageFaultCount);
    put64(vm_counters, 56, pmc.PagefileUsage);
    put64(vm_counters, 64, pmc.PeakPagefileUsage);
    put64(vm_counters, 88, pmc.PrivateUsage);
    put64(vm_counters, 136, job_limit);
}

/* Adds MemoryInfoList, SystemMemoryInfo and ProcessVmCounters to the next
 * dump, as they are now. */
static void add_memory_streams(ULONG64 committed, ULONG64 job_limit)
{
    fill_memory_info();
    fill_commit(committed, job_limit);
    user_streams[0].Type = MemoryInfoListStream;
    user_streams[0].BufferSize = (ULONG)(16 + memory_info.count * sizeof(MINIDUMP_MEMORY_INFO));
    user_streams[0].Buffer = &memory_info;
    user_streams[1].Type = 21; /* SystemMemoryInfoStream */
    user_streams[1].BufferSize = sizeof system_memory;
    user_streams[1].Buffer = system_memory;
    user_streams[2].Type = 22; /* ProcessVmCountersStream */
    user_streams[2].BufferSize = sizeof vm_counters;
    user_streams[2].Buffer = vm_counters;
    user_stream_info.UserStreamCount = 3;
    user_stream_info.UserStreamArray = user_streams;
    crashgen_user_streams = &user_stream_info;
}

/* ---- page_overrun: a copy loop runs off the end of a buffer that ends at a
 * page boundary; the next page is reserved, not committed. ---- */

static CRASHGEN_NOINLINE void add_into(int *dst, const int *src, size_t count)
{
    for (size_t i = 0; i < count; i++)
        dst[i] += src[i];
}

static void mode_page_overrun(void)
{
    static const int source[64] = {1};
    char *region = VirtualAlloc(NULL, 0x20000, MEM_RESERVE, PAGE_NOACCESS);
    VirtualAlloc(region, 0x10000, MEM_COMMIT, PAGE_READWRITE);
    /* 32 ints end exactly at the page boundary; 64 are added. */
    int *buffer = (int *)(region + 0x10000) - 32;
    size_t count = 64;
    HIDE(count);
    add_memory_streams(0, 0);
    add_into(buffer, source, count);
}

/* ---- commit_exhaustion: a growable buffer in a reservation commits on
 * demand inside a job with a commit limit; the commit that the limit refuses
 * is not checked, and the next write lands in reserved memory. ---- */

static CRASHGEN_NOINLINE void append_record(char *at)
{
    memset(at, 0x5a, 64);
}

static void mode_commit_exhaustion(void)
{
    const SIZE_T limit = 64 << 20, reserve = 128 << 20, step = 1 << 20;
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION job_info;
    HANDLE job = CreateJobObjectA(NULL, NULL);
    char *region = VirtualAlloc(NULL, reserve, MEM_RESERVE, PAGE_NOACCESS);
    SIZE_T committed = 0;
    memset(&job_info, 0, sizeof job_info);
    job_info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_PROCESS_MEMORY;
    job_info.ProcessMemoryLimit = limit;
    SetInformationJobObject(job, JobObjectExtendedLimitInformation, &job_info, sizeof job_info);
    AssignProcessToJobObject(job, GetCurrentProcess());
    /* Commit 1 MiB at a time, as the buffer grows, until the job refuses. Where
     * the job's limit is not enforced (Wine), the allocator stops by itself at
     * the limit, as the job would have. */
    for (;;) {
        if (committed + step > limit)
            break;
        if (!VirtualAlloc(region + committed, step, MEM_COMMIT, PAGE_READWRITE))
            break;
        memset(region + committed, 1, step);
        committed += step;
    }
    add_memory_streams(committed, limit);
    /* The unchecked grow: the record is written past the committed part. */
    append_record(region + committed + 0x100);
}

/* ---- poison_constant: mov rcx,0FEFEFEFEFEFEFEFEh; mov qword ptr
 * [rax+rcx],41414141h (a general-protection fault: the record says read of
 * 0xffffffffffffffff, the instruction writes) ---- */

static volatile int poison_index;

static CRASHGEN_NOINLINE void write_through_poison(void)
{
    long long index = poison_index & 1;
    __asm__ volatile("mov %0, %%rax\n\t"
                     "movabs $0xFEFEFEFEFEFEFEFE, %%rcx\n\t"
                     "movq $0x41414141, (%%rax,%%rcx)"
                     :
                     : "r"(index)
                     : "rax", "rcx", "memory");
}

static void mode_poison_constant(void)
{
    write_through_poison();
}

/* ---- ascii_constant: mov eax,41414141h; mov [rax],ebx: an address made of
 * printable bytes that the code itself supplies ---- */

static CRASHGEN_NOINLINE void write_ascii_constant(int value)
{
    __asm__ volatile("mov $0x41414141, %%eax\n\t"
                     "mov %0, (%%rax)"
                     :
                     : "r"(value)
                     : "rax", "memory");
}

static void mode_ascii_constant(void)
{
    write_ascii_constant(7);
}

/* ---- heap_header: the header and links of a freed block are overwritten
 * (no fill pattern: plain numbers), then HeapAlloc takes the block off the
 * free list inside ntdll ---- */

static CRASHGEN_NOINLINE void smash(ULONG_PTR *p, size_t count)
{
    for (size_t i = 0; i < count; i++)
        p[i] = 0x0000123456789a00ull + i * 0x10;
}

static void mode_heap_header(void)
{
    HANDLE heap = HeapCreate(0, 0, 0);
    char *keep = HeapAlloc(heap, 0, 96);
    char *victim = HeapAlloc(heap, 0, 96);
    char *guard = HeapAlloc(heap, 0, 96);
    HIDE(keep);
    HIDE(guard);
    HeapFree(heap, 0, victim);
    /* From 16 bytes before the freed block: its header and its list links. */
    smash((ULONG_PTR *)(victim - 16), 6);
    victim = HeapAlloc(heap, 0, 96);
    HIDE(victim);
}

/* ---- assert_message: an engine's assertion raises its own exception code
 * with the message, formatted on its stack, in a callee-saved register ---- */

static CRASHGEN_NOINLINE void assertion_failed(const char *expression, const char *file, int line)
{
    char message[256];
    snprintf(message, sizeof message, "Assertion failed: %s [File:%s] [Line: %d]", expression,
             file, line);
    register const char *kept __asm__("rsi") = message;
    __asm__ volatile("" : "+r"(kept));
    RaiseException(1, EXCEPTION_NONCONTINUABLE, 0, NULL);
    __asm__ volatile("" : : "r"(kept));
}

static void mode_assert_message(void)
{
    int players = 0;
    HIDE(players);
    if (players <= 0)
        assertion_failed("players > 0", "Source/Game/Lobby.cpp", 212);
}

/* ---- debugbreak: DebugBreak() through the import table ---- */

static CRASHGEN_NOINLINE void stop_here(void)
{
    DebugBreak();
    __asm__ volatile("");
}

static void mode_debugbreak(void)
{
    stop_here();
}

/* ---- stack_protector: -fstack-protector's canary check fails in the
 * function whose buffer overflowed; MinGW's libssp __stack_chk_fail prints
 * "*** stack smashing detected ***" and traps ---- */

static CRASHGEN_NOINLINE void copy_name(const char *name)
{
    char buffer[16];
    size_t n = strlen(name);
    HIDE(n);
    memcpy(buffer, name, n + 1);
    HIDE(buffer[0]);
}

static void mode_stack_protector(void)
{
    copy_name("a name much longer than sixteen bytes, which overruns the buffer");
}

int main(int argc, char **argv)
{
    static const struct crashgen_mode modes[] = {
        {"page_overrun", mode_page_overrun},
        {"commit_exhaustion", mode_commit_exhaustion},
        {"poison_constant", mode_poison_constant},
        {"ascii_constant", mode_ascii_constant},
        {"heap_header", mode_heap_header},
        {"assert_message", mode_assert_message},
        {"debugbreak", mode_debugbreak},
        {"stack_protector", mode_stack_protector},
    };
    return crashgen_main(argc, argv, modes, sizeof modes / sizeof modes[0]);
}
