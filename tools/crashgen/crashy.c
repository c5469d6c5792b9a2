/*
 * crashy.c - sample crashing program for ntdbg's test dumps.
 *
 * Usage:  crashy.exe <mode> <dump-path>
 *
 * Modes:
 *   null        write through a NULL pointer            -> 0xC0000005
 *   divzero     integer divide by zero                  -> 0xC0000094
 *   stack       unbounded recursion, ~512-byte frames   -> 0xC00000FD
 *   breakpoint  __debugbreak()                          -> 0x80000003
 *   raise       RaiseException(0xE0001234, 0, 3, {1,2,3})
 *   thread      NULL write on a worker thread ("crash-worker") while the
 *               main thread waits in WaitForSingleObject -> 0xC0000005
 *
 * The process writes its own minidump (MiniDumpNormal, with a
 * MINIDUMP_EXCEPTION_INFORMATION) to <dump-path>:
 *   - from an unhandled-exception filter on the faulting thread for every mode
 *     except "stack";
 *   - for "stack" the exhausted stack cannot run the writer, so a vectored
 *     exception handler copies the exception record and context to globals and
 *     wakes a writer thread created at startup, which writes the dump on its
 *     own stack and terminates the process.
 *
 * Exit codes: 0 dump written (process ended from the handler), 2 usage error,
 * 3 dump could not be written, 4 the mode returned without crashing.
 *
 * Built by tools/crashgen/generate.sh with clang + lld for x86_64-w64-mingw32
 * (and i686-w64-mingw32) with -gcodeview, so a PDB with line numbers exists.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <dbghelp.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#define NOINLINE __attribute__((noinline))

#define EXIT_DUMP_WRITTEN 0
#define EXIT_USAGE 2
#define EXIT_DUMP_FAILED 3
#define EXIT_NO_CRASH 4

#define RAISE_CODE 0xE0001234u

static const char *g_dump_path;

/* Stack-overflow path: state handed from the vectored handler to the writer. */
static HANDLE g_overflow_event;   /* set by the handler: dump please */
static HANDLE g_writer_thread;
static volatile LONG g_overflow_seen;
static DWORD g_fault_thread_id;
static EXCEPTION_RECORD g_fault_record;
static CONTEXT g_fault_context;
static EXCEPTION_POINTERS g_fault_pointers;

/* Sinks that keep the optimiser from discarding our work. */
volatile int g_sink;
int *volatile g_null_ptr; /* stays NULL; volatile so the store is emitted */
volatile char *volatile g_frame;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */

typedef HRESULT(WINAPI *SetThreadDescriptionFn)(HANDLE, PCWSTR);

/* Name a thread if the running system has SetThreadDescription (Windows 10
 * 1607+, Wine 5+); silently do nothing otherwise. */
static void name_thread(HANDLE thread, const wchar_t *name)
{
    HMODULE k32 = GetModuleHandleW(L"kernel32.dll");
    SetThreadDescriptionFn fn = NULL;
    if (k32)
        fn = (SetThreadDescriptionFn)(void *)GetProcAddress(k32, "SetThreadDescription");
    if (!fn) {
        HMODULE kb = GetModuleHandleW(L"kernelbase.dll");
        if (kb)
            fn = (SetThreadDescriptionFn)(void *)GetProcAddress(kb, "SetThreadDescription");
    }
    if (fn)
        fn(thread, name);
}

/* MiniDumpWriteDump callback: drop the calling (dump-writer) thread. */
static BOOL CALLBACK skip_current_thread(PVOID param, const PMINIDUMP_CALLBACK_INPUT in,
                                         PMINIDUMP_CALLBACK_OUTPUT out)
{
    (void)param;
    (void)out;
    if (in->CallbackType == ThreadCallback || in->CallbackType == ThreadExCallback ||
        in->CallbackType == IncludeThreadCallback) {
        DWORD tid = in->CallbackType == IncludeThreadCallback ? in->IncludeThread.ThreadId
                                                              : in->Thread.ThreadId;
        if (tid == GetCurrentThreadId())
            return FALSE;
    }
    return TRUE;
}

/* Write the dump for the given exception. thread_id is the id of the thread
 * the exception happened on. Returns TRUE on success. */
static BOOL write_dump(EXCEPTION_POINTERS *ep, DWORD thread_id)
{
    HANDLE file;
    MINIDUMP_EXCEPTION_INFORMATION mei;
    MINIDUMP_CALLBACK_INFORMATION callback;
    MINIDUMP_CALLBACK_INFORMATION *cb = NULL;
    BOOL ok;

    file = CreateFileA(g_dump_path, GENERIC_READ | GENERIC_WRITE, 0, NULL,
                       CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    if (file == INVALID_HANDLE_VALUE) {
        fprintf(stderr, "crashy: cannot create %s (error %lu)\n", g_dump_path,
                (unsigned long)GetLastError());
        return FALSE;
    }

    mei.ThreadId = thread_id;
    mei.ExceptionPointers = ep;
    mei.ClientPointers = FALSE;

    /* Register the process with dbghelp without loading module symbols.
     * Otherwise Wine's MiniDumpWriteDump calls SymInitialize(..., TRUE)
     * itself and then adds every UNWIND_INFO of every loaded x64 module to
     * the memory list (~7,000 ranges, ~200 KB), which Windows never does. */
    SymInitialize(GetCurrentProcess(), NULL, FALSE);

    /* When another thread writes the dump (stack overflow), leave that
     * writer thread out: Wine would list it with the faulting context and
     * the whole of its own stack. */
    if (thread_id != GetCurrentThreadId()) {
        callback.CallbackRoutine = skip_current_thread;
        callback.CallbackParam = NULL;
        cb = &callback;
    }

    ok = MiniDumpWriteDump(GetCurrentProcess(), GetCurrentProcessId(), file,
                           MiniDumpNormal, &mei, NULL, cb);
    if (!ok)
        fprintf(stderr, "crashy: MiniDumpWriteDump failed (error %lu)\n",
                (unsigned long)GetLastError());
    FlushFileBuffers(file);
    CloseHandle(file);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Exception plumbing                                                       */

static LONG WINAPI unhandled_filter(EXCEPTION_POINTERS *ep)
{
    BOOL ok = write_dump(ep, GetCurrentThreadId());
    fprintf(stderr, "crashy: exception 0x%08lx at %p, dump %s: %s\n",
            (unsigned long)ep->ExceptionRecord->ExceptionCode,
            ep->ExceptionRecord->ExceptionAddress, g_dump_path,
            ok ? "written" : "FAILED");
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), ok ? EXIT_DUMP_WRITTEN : EXIT_DUMP_FAILED);
    return EXCEPTION_EXECUTE_HANDLER;
}

/* Runs on the faulting thread with very little stack left: no CRT calls,
 * only copy the state and hand over to the writer thread. */
static LONG WINAPI overflow_vectored_handler(EXCEPTION_POINTERS *ep)
{
    if (ep->ExceptionRecord->ExceptionCode != EXCEPTION_STACK_OVERFLOW)
        return EXCEPTION_CONTINUE_SEARCH;
    if (InterlockedExchange(&g_overflow_seen, 1) != 0) {
        /* A second overflow while the writer works: just wait for the end. */
        for (;;)
            Sleep(INFINITE);
    }
    g_fault_thread_id = GetCurrentThreadId();
    g_fault_record = *ep->ExceptionRecord;
    g_fault_record.ExceptionRecord = NULL;
    g_fault_context = *ep->ContextRecord;
    g_fault_pointers.ExceptionRecord = &g_fault_record;
    g_fault_pointers.ContextRecord = &g_fault_context;
    SetEvent(g_overflow_event);
    /* The writer thread terminates the process; never come back. */
    WaitForSingleObject(g_writer_thread, INFINITE);
    for (;;)
        Sleep(INFINITE);
}

static DWORD WINAPI overflow_writer_thread(LPVOID unused)
{
    BOOL ok;
    (void)unused;
    WaitForSingleObject(g_overflow_event, INFINITE);
    ok = write_dump(&g_fault_pointers, g_fault_thread_id);
    fprintf(stderr, "crashy: exception 0x%08lx at %p on thread %lu, dump %s: %s\n",
            (unsigned long)g_fault_record.ExceptionCode,
            g_fault_record.ExceptionAddress, (unsigned long)g_fault_thread_id,
            g_dump_path, ok ? "written" : "FAILED");
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), ok ? EXIT_DUMP_WRITTEN : EXIT_DUMP_FAILED);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Crash helpers                                                            */

NOINLINE void write_null(int value)
{
    *g_null_ptr = value; /* faults: write of address 0 */
}

NOINLINE int divide(int numerator)
{
    volatile int zero = 0;
    volatile int num = numerator;
    return num / zero; /* idiv by zero */
}

NOINLINE int recurse(int depth)
{
    /* The address escapes to a global, so the compiler has to keep the
     * whole 512-byte array in every frame. */
    volatile char frame[512];
    g_frame = frame;
    frame[depth & 511] = (char)depth;
    /* Use the result afterwards so this is not a tail call. */
    return recurse(depth + 1) + frame[(depth * 7) & 511];
}

NOINLINE void do_breakpoint(void)
{
    __debugbreak();
}

NOINLINE void do_raise(void)
{
    ULONG_PTR params[3] = {1, 2, 3};
    RaiseException(RAISE_CODE, 0, 3, params);
}

/* ------------------------------------------------------------------------ */
/* Modes                                                                    */

NOINLINE int mode_null(void)
{
    write_null(42);
    return EXIT_NO_CRASH;
}

NOINLINE int mode_divzero(void)
{
    g_sink = divide(7);
    return EXIT_NO_CRASH;
}

NOINLINE int mode_stack(void)
{
    g_sink = recurse(0);
    return EXIT_NO_CRASH;
}

NOINLINE int mode_breakpoint(void)
{
    do_breakpoint();
    return EXIT_NO_CRASH;
}

NOINLINE int mode_raise(void)
{
    do_raise();
    return EXIT_NO_CRASH;
}

static DWORD WINAPI crash_worker(LPVOID arg)
{
    write_null((int)(INT_PTR)arg);
    return EXIT_NO_CRASH;
}

NOINLINE int mode_thread(void)
{
    HANDLE worker = CreateThread(NULL, 0, crash_worker, (LPVOID)(INT_PTR)42,
                                 CREATE_SUSPENDED, NULL);
    if (!worker) {
        fprintf(stderr, "crashy: CreateThread failed (error %lu)\n",
                (unsigned long)GetLastError());
        return EXIT_DUMP_FAILED;
    }
    name_thread(worker, L"crash-worker");
    ResumeThread(worker);
    WaitForSingleObject(worker, INFINITE);
    CloseHandle(worker);
    return EXIT_NO_CRASH;
}

/* ------------------------------------------------------------------------ */

struct mode {
    const char *name;
    int (*run)(void);
};

static const struct mode modes[] = {
    {"null", mode_null},
    {"divzero", mode_divzero},
    {"stack", mode_stack},
    {"breakpoint", mode_breakpoint},
    {"raise", mode_raise},
    {"thread", mode_thread},
};

static int usage(void)
{
    size_t i;
    fprintf(stderr, "usage: crashy.exe <mode> <dump-path>\nmodes:");
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        fprintf(stderr, " %s", modes[i].name);
    fprintf(stderr, "\n");
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    size_t i;
    const struct mode *m = NULL;
    int rc;

    if (argc != 3)
        return usage();
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(argv[1], modes[i].name) == 0)
            m = &modes[i];
    if (!m)
        return usage();
    g_dump_path = argv[2];

    name_thread(GetCurrentThread(), L"main");
    SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
    SetUnhandledExceptionFilter(unhandled_filter);

    if (strcmp(m->name, "stack") == 0) {
        g_overflow_event = CreateEventW(NULL, TRUE, FALSE, NULL);
        g_writer_thread = CreateThread(NULL, 0, overflow_writer_thread, NULL, 0, NULL);
        if (!g_overflow_event || !g_writer_thread) {
            fprintf(stderr, "crashy: cannot set up the overflow writer (error %lu)\n",
                    (unsigned long)GetLastError());
            return EXIT_DUMP_FAILED;
        }
        name_thread(g_writer_thread, L"dump-writer");
        AddVectoredExceptionHandler(1, overflow_vectored_handler);
    }

    rc = m->run();
    fprintf(stderr, "crashy: mode %s returned without crashing\n", m->name);
    return rc;
}
