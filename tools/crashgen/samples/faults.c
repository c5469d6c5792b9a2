/*
 * faults.c - crashes whose cause ntdbg's inferences must name, each with its
 * evidence placed where a MiniDumpNormal holds it (a thread's stack, the
 * registers, the exception record, or the exe's read-only sections that
 * ntdbg reads from the image beside the dump).
 *
 * See the "faults.exe" section of tools/crashgen/README.md for every mode.
 */
// crashgen-modes: heap_uaf heap_overflow freed_pointer fastfail_cookie constant_address leaf_null_write assertion deliberate_trap stack_cycle context_thread bit_flip
// crashgen-flags: -O1
#include "crashgen.h"

#include <stdint.h>

/* Keeps a value opaque to the optimiser without any memory traffic. */
#define HIDE(v) __asm__ volatile("" : "+r"(v))

/* ---- heap: a use-after-free write and an overflow that the heap manager
 * itself then trips over (Wine's heap unlinks the damaged free block). ---- */

/* Writes `count` 'A' bytes at `p`: the stray write of both heap modes. */
static CRASHGEN_NOINLINE void scribble(void *p, size_t count)
{
    memset(p, 'A', count);
}

static void mode_heap_uaf(void)
{
    HANDLE heap = HeapCreate(0, 0, 0);
    char *keep = HeapAlloc(heap, 0, 64);
    char *victim = HeapAlloc(heap, 0, 64);
    char *guard = HeapAlloc(heap, 0, 64);
    HIDE(keep);
    HIDE(guard);
    HeapFree(heap, 0, victim);
    /* Use after free: the freed block's free-list links are overwritten. */
    scribble(victim, 32);
    /* The next allocation of that size takes the damaged block off the list. */
    victim = HeapAlloc(heap, 0, 64);
    HIDE(victim);
}

static void mode_heap_overflow(void)
{
    HANDLE heap = HeapCreate(0, 0, 0);
    char *first = HeapAlloc(heap, 0, 64);
    char *second = HeapAlloc(heap, 0, 64);
    char *guard = HeapAlloc(heap, 0, 64);
    HIDE(guard);
    HeapFree(heap, 0, second);
    /* A 64-byte buffer written with 128 bytes: the free block behind it
     * loses its header and links. */
    scribble(first, 128);
    HeapFree(heap, 0, first);
}

/* ---- fill pattern: a pointer read from memory a debug heap filled with
 * 0xFEEEFEEE after HeapFree, then followed. ---- */

struct node {
    struct node *next;
    int value;
};

static CRASHGEN_NOINLINE int read_next_value(struct node *n)
{
    return n->next->value;
}

static void mode_freed_pointer(void)
{
    struct node freed;
    memset(&freed, 0, sizeof freed);
    /* What the debug heap leaves in freed memory. */
    for (size_t i = 0; i < sizeof freed; i += 2) {
        ((unsigned char *)&freed)[i] = 0xEE;
        ((unsigned char *)&freed)[i + 1] = 0xFE;
    }
    HIDE(freed.next);
    printf("%d\n", read_next_value(&freed));
}

/* ---- fail-fast with a named code. Wine hands int 0x29 (__fastfail) to a
 * debugger only (second chance), so no in-process handler can write the dump;
 * this mode takes the path MSVC's __report_gsfailure takes where __fastfail is
 * unavailable: the same exception record (0xC0000409, parameter 0 = the
 * fast-fail code) given to UnhandledExceptionFilter with a captured context. ---- */

static CRASHGEN_NOINLINE void report_security_failure(ULONG_PTR fast_fail_code)
{
    static EXCEPTION_RECORD record;
    static CONTEXT context;
    EXCEPTION_POINTERS pointers = {&record, &context};
    RtlCaptureContext(&context);
    record.ExceptionCode = STATUS_STACK_BUFFER_OVERRUN;
    record.ExceptionFlags = EXCEPTION_NONCONTINUABLE;
    record.ExceptionAddress = (void *)context.Rip;
    record.NumberParameters = 1;
    record.ExceptionInformation[0] = fast_fail_code;
    UnhandledExceptionFilter(&pointers);
}

static CRASHGEN_NOINLINE void check_cookie(uintptr_t expected, uintptr_t found)
{
    if (expected != found)
        report_security_failure(2); /* FAST_FAIL_STACK_COOKIE_CHECK_FAILURE */
}

static void mode_fastfail_cookie(void)
{
    uintptr_t found = 0x4141414141414141;
    HIDE(found);
    check_cookie(0x2B992DDFA232, found);
}

/* ---- constant address: mov eax,3E3C9A10h; mov ebx,[rax] (an address
 * nothing maps under Wine; 4E3C9h is mapped there) ---- */

static CRASHGEN_NOINLINE void read_constant_address(void)
{
    __asm__ volatile("mov $0x3E3C9A10, %%eax\n\t"
                     "mov (%%rax), %%ebx"
                     :
                     :
                     : "rax", "rbx", "memory");
}

static void mode_constant_address(void)
{
    read_constant_address();
}

/* ---- a two-instruction leaf: mov byte ptr [0],1; ret ---- */

__attribute__((naked, noinline)) static void leaf_null_write(void)
{
    __asm__ volatile("movb $1, 0\n\t"
                     "ret");
}

static CRASHGEN_NOINLINE void call_leaf(void)
{
    leaf_null_write();
    printf("not reached\n");
}

static void mode_leaf_null_write(void)
{
    call_leaf();
}

/* ---- an engine-style assertion: the message is formatted on the stack and
 * its address is in rcx when the breakpoint fires. ---- */

static CRASHGEN_NOINLINE void assertion_break(const char *message)
{
    __asm__ volatile("int3" : : "c"(message) : "memory");
}

static CRASHGEN_NOINLINE void check_positive(int x)
{
    char message[160];
    if (!(x > 0)) {
        snprintf(message, sizeof message, "Assertion failed: %s [File: %s] [Line: %d]",
                 "x > 0", "faults.c", __LINE__);
        assertion_break(message);
    }
}

static void mode_assertion(void)
{
    int x = -3;
    HIDE(x);
    check_positive(x);
}

/* ---- a deliberate crash: a reason code stored to a global, then ud2 ---- */

volatile uint32_t g_crash_reason;

static CRASHGEN_NOINLINE void fatal_error(void)
{
    g_crash_reason = 0xDEAD0001;
    __builtin_trap();
}

static void mode_deliberate_trap(void)
{
    fatal_error();
}

/* ---- a dump written by another thread: a vectored handler on the crashing
 * thread copies the exception record and context (the exhausted stack of an
 * overflow can run nothing more) and wakes the main thread, which writes the
 * dump (as crashy.c's "stack" mode does). ---- */

static EXCEPTION_RECORD handoff_record;
static CONTEXT handoff_context;
static EXCEPTION_POINTERS handoff_pointers = {&handoff_record, &handoff_context};
static DWORD handoff_thread;
static HANDLE handoff_ready;
static volatile LONG handoff_taken;

static LONG WINAPI handoff_handler(EXCEPTION_POINTERS *ep)
{
    if (InterlockedExchange(&handoff_taken, 1) == 0) {
        handoff_record = *ep->ExceptionRecord;
        handoff_record.ExceptionRecord = NULL;
        handoff_context = *ep->ContextRecord;
        handoff_thread = GetCurrentThreadId();
        SetEvent(handoff_ready);
    }
    for (;;)
        Sleep(INFINITE);
}

/* Runs `body` on a new thread and writes the dump from the main thread once it
 * crashes. `name_writer` names the writing thread in the dump instead of the
 * crashing one (a crash reporter's bug). The writer stays in the dump (with
 * crashgen_write_dump's skip_self, Wine 8 wrote no thread list at all), and
 * Wine lists it with its whole 1 MiB stack: these dumps are about 1 MiB
 * (mostly zeros, a few KiB compressed). */
static void crash_on_worker(LPTHREAD_START_ROUTINE body, BOOL name_writer)
{
    HANDLE worker;
    handoff_ready = CreateEventA(NULL, TRUE, FALSE, NULL);
    AddVectoredExceptionHandler(1, handoff_handler);
    worker = CreateThread(NULL, 0, body, NULL, 0, NULL);
    if (!worker) {
        fprintf(stderr, "crashgen: CreateThread failed: %lu\n", GetLastError());
        return;
    }
    if (WaitForSingleObject(handoff_ready, 60000) != WAIT_OBJECT_0) {
        fprintf(stderr, "crashgen: the worker raised no exception\n");
        return;
    }
    crashgen_write_dump(&handoff_pointers, name_writer ? GetCurrentThreadId() : handoff_thread,
                        FALSE);
}

/* ---- stack overflow through a cycle of two functions ---- */

static CRASHGEN_NOINLINE int pong(volatile char *buffer, int depth);

static CRASHGEN_NOINLINE int ping(volatile char *buffer, int depth)
{
    volatile char frame[96];
    frame[0] = buffer[0];
    return pong(frame, depth + 1) + frame[1];
}

static CRASHGEN_NOINLINE int pong(volatile char *buffer, int depth)
{
    volatile char frame[160];
    frame[0] = buffer[0];
    return ping(frame, depth + 1) + frame[2];
}

static DWORD WINAPI stack_cycle_thread(void *arg)
{
    volatile char seed[8] = {0};
    (void)arg;
    return (DWORD)ping(seed, 0);
}

static void mode_stack_cycle(void)
{
    crash_on_worker(stack_cycle_thread, FALSE);
}

/* ---- the exception context on another thread than the one the dump names ---- */

static CRASHGEN_NOINLINE void worker_null_write(int *p)
{
    *p = 0x51;
}

static DWORD WINAPI context_thread_worker(void *arg)
{
    int *p = arg;
    HIDE(p);
    worker_null_write(p);
    return 0;
}

static void mode_context_thread(void)
{
    crash_on_worker(context_thread_worker, TRUE);
}

/* ---- a pointer to a stack variable with one bit flipped (bit 36) ---- */

static CRASHGEN_NOINLINE int read_through(volatile int *p)
{
    return *p;
}

static void mode_bit_flip(void)
{
    volatile int local = 7;
    uintptr_t address = (uintptr_t)&local;
    HIDE(address);
    address ^= (uintptr_t)1 << 36;
    printf("%d\n", read_through((volatile int *)address));
}

int main(int argc, char **argv)
{
    static const struct crashgen_mode modes[] = {
        {"heap_uaf", mode_heap_uaf},
        {"heap_overflow", mode_heap_overflow},
        {"freed_pointer", mode_freed_pointer},
        {"fastfail_cookie", mode_fastfail_cookie},
        {"constant_address", mode_constant_address},
        {"leaf_null_write", mode_leaf_null_write},
        {"assertion", mode_assertion},
        {"deliberate_trap", mode_deliberate_trap},
        {"stack_cycle", mode_stack_cycle},
        {"context_thread", mode_context_thread},
        {"bit_flip", mode_bit_flip},
    };
    return crashgen_main(argc, argv, modes, sizeof modes / sizeof modes[0]);
}
