/*
 * crashgen.h - dump writing shared by the sample programs of
 * tools/crashgen/samples/ (built and run by tools/crashgen/samples.sh).
 *
 * A sample's main() calls crashgen_main(argc, argv, modes, count): it takes
 * `<mode> <dump-path>` from the command line, installs an unhandled-exception
 * filter that writes the dump and ends the process, and calls the mode's
 * function. Modes that do not fault (a hang, a deadlock, an abort hook) call
 * crashgen_write_dump() themselves, from whichever thread should write it.
 *
 * The dump type is MiniDumpNormal: thread stacks and 256 bytes around each
 * instruction pointer, no heap and no globals (Wine's MiniDumpWriteDump
 * honours no other flag than MiniDumpWithFullMemory, and no MemoryCallback).
 * A mode whose evidence lives on the heap or in globals either keeps it on a
 * thread's stack or sets crashgen_dump_type = MiniDumpWithFullMemory (about
 * 30 MB under Wine) before it crashes.
 *
 * Exit codes: 0 dump written, 2 usage, 3 dump could not be written, 4 the
 * mode returned without a dump.
 */
#ifndef CRASHGEN_H
#define CRASHGEN_H

#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <dbghelp.h>
#include <stdio.h>
#include <string.h>

#define CRASHGEN_NOINLINE __attribute__((noinline))

/* One crash mode: its command-line name and the function that crashes. */
struct crashgen_mode {
    const char *name;
    void (*run)(void);
};

static const char *crashgen_dump_path;
/* The dump type the next dump is written with. */
static MINIDUMP_TYPE crashgen_dump_type = MiniDumpNormal;

/* Extra streams for the next dump (what Wine does not write), or NULL. */
static MINIDUMP_USER_STREAM_INFORMATION *crashgen_user_streams;

/* Whether the dump-writing thread leaves itself out of the dump (a watchdog). */
static BOOL crashgen_skip_self;

/* MiniDumpWriteDump callback: for a watchdog, leaves the calling (dump-writer)
 * thread out. (Wine's MiniDumpWriteDump ignores MemoryCallback, so extra
 * ranges cannot be added this way; see crashgen_dump_type.) */
static BOOL CALLBACK crashgen_callback(PVOID param, const PMINIDUMP_CALLBACK_INPUT in,
                                       PMINIDUMP_CALLBACK_OUTPUT out)
{
    (void)param;
    (void)out;
    switch (in->CallbackType) {
    case IncludeThreadCallback:
        return !crashgen_skip_self || in->IncludeThread.ThreadId != GetCurrentThreadId();
    case ThreadCallback:
    case ThreadExCallback:
        return !crashgen_skip_self || in->Thread.ThreadId != GetCurrentThreadId();
    default:
        return TRUE;
    }
}

/*
 * Writes the dump and ends the process (exit code 0, or 3 on failure).
 * ep: the exception, or NULL for a dump without an exception stream (hangs).
 * thread_id: the thread the exception happened on (ignored without ep).
 * skip_self: leave the calling thread out of the dump (a watchdog).
 */
static void crashgen_write_dump(EXCEPTION_POINTERS *ep, DWORD thread_id, BOOL skip_self)
{
    MINIDUMP_EXCEPTION_INFORMATION mei;
    MINIDUMP_CALLBACK_INFORMATION callback;
    BOOL ok = FALSE;
    HANDLE file;
    crashgen_skip_self = skip_self;
    file = CreateFileA(crashgen_dump_path, GENERIC_READ | GENERIC_WRITE, 0, NULL,
                              CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    if (file != INVALID_HANDLE_VALUE) {
        mei.ThreadId = thread_id;
        mei.ExceptionPointers = ep;
        mei.ClientPointers = FALSE;
        callback.CallbackRoutine = crashgen_callback;
        callback.CallbackParam = NULL;
        /* Register the process with dbghelp without loading module symbols:
         * otherwise Wine's MiniDumpWriteDump copies every UNWIND_INFO of every
         * x64 module into the dump, which Windows does not do. */
        SymInitialize(GetCurrentProcess(), NULL, FALSE);
        ok = MiniDumpWriteDump(GetCurrentProcess(), GetCurrentProcessId(), file,
                               crashgen_dump_type, ep ? &mei : NULL, crashgen_user_streams,
                               &callback);
        FlushFileBuffers(file);
        CloseHandle(file);
    }
    fprintf(stderr, "crashgen: %s 0x%08lx, dump %s: %s\n", ep ? "exception" : "no exception",
            ep ? (unsigned long)ep->ExceptionRecord->ExceptionCode : 0UL, crashgen_dump_path,
            ok ? "written" : "FAILED");
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), ok ? 0 : 3);
}

static LONG WINAPI crashgen_filter(EXCEPTION_POINTERS *ep)
{
    crashgen_write_dump(ep, GetCurrentThreadId(), FALSE);
    return EXCEPTION_EXECUTE_HANDLER;
}

/* Runs the mode named on the command line; see the top of this file. */
static int crashgen_main(int argc, char **argv, const struct crashgen_mode *modes, int count)
{
    int i;
    if (argc == 3) {
        for (i = 0; i < count; i++) {
            if (strcmp(argv[1], modes[i].name) == 0) {
                crashgen_dump_path = argv[2];
                SetUnhandledExceptionFilter(crashgen_filter);
                modes[i].run();
                fprintf(stderr, "crashgen: mode %s returned without a dump\n", argv[1]);
                return 4;
            }
        }
    }
    fprintf(stderr, "usage: %s <mode> <dump-path>\nmodes:", argc > 0 ? argv[0] : "sample");
    for (i = 0; i < count; i++)
        fprintf(stderr, " %s", modes[i].name);
    fprintf(stderr, "\n");
    return 2;
}

#endif
