/*
 * locals.c - a crashing program whose parameters and locals are known, for
 * ntdbg's frame-variable tests (`.frame`, `dv`, `kp`).
 *
 * Usage:  locals.exe <dump-path>
 *
 * main -> walk_points -> crash_in_point: a NULL write in crash_in_point, with
 * the process writing its own minidump (MiniDumpNormal) from an
 * unhandled-exception filter, as crashy.exe does.
 *
 * Known values at the crash (asserted by the tests):
 *   main:            origin = { x = 0x11, y = 0x22, tag = 0x1234567890 } (a struct
 *                    on the stack), points[4] = see below, count = 4
 *   walk_points:     pts = &points[0] (a pointer parameter), count = 4,
 *                    limit = 2, i = 2 (the loop index), total = 0n111 (kept
 *                    in a callee-saved register at -O2 across the call)
 *   clamp_add:       inlined into walk_points (its a/b/r belong to the inline site)
 *   crash_in_point:  p = &points[2] ({ x = 100, y = 200, tag = 0x3333 }),
 *                    index = 2, scale = 0n111, product = 0n11102
 *
 * Built by tools/crashgen/generate-locals.sh with clang + lld (CodeView) at
 * -O0 and -O2.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <dbghelp.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE __attribute__((always_inline)) inline

struct point {
    int x;
    int y;
    long long tag;
};

static const char *g_dump_path;
volatile int g_sink;
int *volatile g_null_ptr; /* stays NULL; volatile so the store is emitted */
struct point *volatile g_keep; /* makes main's struct live on the stack */

static LONG WINAPI write_dump_filter(EXCEPTION_POINTERS *ep)
{
    MINIDUMP_EXCEPTION_INFORMATION mei;
    HANDLE file = CreateFileA(g_dump_path, GENERIC_READ | GENERIC_WRITE, 0, NULL,
                              CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    BOOL ok = FALSE;
    if (file != INVALID_HANDLE_VALUE) {
        mei.ThreadId = GetCurrentThreadId();
        mei.ExceptionPointers = ep;
        mei.ClientPointers = FALSE;
        /* As in crashy.c: keep Wine's dbghelp from copying every UNWIND_INFO. */
        SymInitialize(GetCurrentProcess(), NULL, FALSE);
        ok = MiniDumpWriteDump(GetCurrentProcess(), GetCurrentProcessId(), file,
                               MiniDumpNormal, &mei, NULL, NULL);
        FlushFileBuffers(file);
        CloseHandle(file);
    }
    fprintf(stderr, "locals: exception 0x%08lx, dump %s: %s\n",
            (unsigned long)ep->ExceptionRecord->ExceptionCode, g_dump_path,
            ok ? "written" : "FAILED");
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), ok ? 0 : 3);
    return EXCEPTION_EXECUTE_HANDLER;
}

NOINLINE void crash_in_point(struct point *p, int index, int scale)
{
    int product = p->x * scale + index;
    g_sink = product;
    *g_null_ptr = product;
    g_sink = p->y + index;
}

static ALWAYS_INLINE int clamp_add(int a, int b)
{
    int r = a + b;
    if (r > 100000)
        r = 100000;
    return r;
}

NOINLINE int walk_points(struct point *pts, int count, int limit)
{
    int total = 0;
    for (int i = 0; i < count; i++) {
        total = clamp_add(total, pts[i].x);
        if (i == limit)
            crash_in_point(&pts[i], i, total);
        g_sink = total;
    }
    return total;
}

int main(int argc, char **argv)
{
    struct point origin = {0x11, 0x22, 0x1234567890LL};
    struct point points[4] = {{1, 2, 0x1111}, {10, 20, 0x2222}, {100, 200, 0x3333}, {7, 8, 0x4444}};
    int count = 4;
    if (argc != 2) {
        fprintf(stderr, "usage: locals.exe <dump-path>\n");
        return 2;
    }
    g_dump_path = argv[1];
    SetUnhandledExceptionFilter(write_dump_filter);
    g_keep = &origin;
    g_sink = walk_points(points, count, 2);
    g_sink = (int)origin.tag;
    return 4;
}
