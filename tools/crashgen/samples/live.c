/*
 * live.c - a program to debug live, for ntdbg's Win32 backend (pid:/exe:)
 * and its tests under Wine (tests/mcp_client/test_win32_live.py). Built by
 * tools/crashgen/samples.sh live (build only: nothing to run, no dumps); the
 * exe and PDB go to testdata/win32live/.
 *
 *   live.exe MODE [STATUS-FILE]
 *
 * A worker thread calls worker() about ten times a second; worker() has a
 * local (`local_value`, for dv) and bumps the global `live_counter` (for
 * ba w4). After every round the worker rewrites STATUS-FILE (when given) with
 * "pid=N count=M", so a test finds the Windows process id and sees the program
 * go on after a detach. Every mode runs until killed except crash.
 *
 *   loop    only the worker.
 *   print   the worker also calls OutputDebugStringA("live: round N\n").
 *   late    the main thread loads version.dll after about a second and frees
 *           it a second later (ModLoad / Unload module events).
 *   crash   the worker writes through a null pointer in crash_here() on its
 *           sixth round: an access violation (first, then second chance).
 */
// crashgen-modes: none
// crashgen-out: win32live
/* Not crashgen.h: this program writes no dumps. */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdio.h>
#include <string.h>

#define CRASHGEN_NOINLINE __attribute__((noinline))

/* Bumped by every round of worker(): a 4-byte global to watch with ba w4. */
volatile LONG live_counter;

static const char *status_path;
static int print_mode;
static int crash_mode;

/* One round of work: a local to read and a global to watch. */
CRASHGEN_NOINLINE int worker(int round)
{
    volatile int local_value = round * 3 + 1;
    live_counter = live_counter + 1;
    return local_value;
}

/* The access violation of the crash mode. */
CRASHGEN_NOINLINE void crash_here(volatile int *where)
{
    *where = 1;
}

static void write_status(void)
{
    char text[64];
    DWORD written;
    HANDLE file;
    int n;
    if (!status_path)
        return;
    n = snprintf(text, sizeof text, "pid=%lu count=%ld\n", GetCurrentProcessId(), live_counter);
    file = CreateFileA(status_path, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                       CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    if (file == INVALID_HANDLE_VALUE)
        return;
    WriteFile(file, text, (DWORD)n, &written, NULL);
    CloseHandle(file);
}

static DWORD WINAPI worker_thread(LPVOID arg)
{
    int round;
    char line[64];
    (void)arg;
    for (round = 0;; round++) {
        worker(round);
        if (print_mode) {
            snprintf(line, sizeof line, "live: round %d\n", round);
            OutputDebugStringA(line);
        }
        if (crash_mode && round == 5)
            crash_here(NULL);
        write_status();
        Sleep(100);
    }
    return 0;
}

int main(int argc, char **argv)
{
    HANDLE thread;
    HMODULE late;
    if (argc < 2 || (strcmp(argv[1], "loop") && strcmp(argv[1], "print") &&
                     strcmp(argv[1], "late") && strcmp(argv[1], "crash"))) {
        fprintf(stderr, "usage: %s loop|print|late|crash [status-file]\n", argc ? argv[0] : "live");
        return 2;
    }
    status_path = argc > 2 ? argv[2] : NULL;
    print_mode = !strcmp(argv[1], "print");
    crash_mode = !strcmp(argv[1], "crash");
    write_status();
    thread = CreateThread(NULL, 0, worker_thread, NULL, 0, NULL);
    if (!thread)
        return 3;
    if (!strcmp(argv[1], "late")) {
        Sleep(1000);
        late = LoadLibraryA("version.dll");
        Sleep(1000);
        if (late)
            FreeLibrary(late);
    }
    WaitForSingleObject(thread, INFINITE);
    return 0;
}
