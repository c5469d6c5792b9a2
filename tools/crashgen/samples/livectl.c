/*
 * livectl.c - a program to test live run control on, under `winedbg --gdb` and ntdbg's
 * Win32 stub (crates/ntdbg-commands/tests/live_winedbg.rs: av10). Built by
 * tools/crashgen/samples.sh livectl (build only: nothing to run, no dumps); the exe and
 * PDB go to testdata/livectl/.
 *
 *   livectl.exe MODE
 *
 *   steps    main calls step_here(3, 4) once (a function that starts with a one-byte
 *            `push`), then av10's fault: the same instructions every run, for comparing
 *            single steps from a breakpoint with single steps of the untouched code.
 *   threads  four worker threads call mt_hit(N) in a tight loop, so a breakpoint there
 *            is hit by several threads at once; main waits for them forever.
 *   av10     main writes through the address 0x10 in write_at_0x10(); nothing handles it
 *            (first chance, then second chance).
 */
// crashgen-modes: none
// crashgen-out: livectl
// crashgen-flags: -O1
/* Not crashgen.h: this program writes no dumps. */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

/* What mt_hit adds up: a global, so the loop is not optimised away. */
volatile LONG64 mt_total;
/* What step_here leaves behind. */
volatile LONG64 step_result;

/* Called by every worker in a tight loop. */
NOINLINE void mt_hit(LONG64 who)
{
    mt_total = mt_total + who;
}

static DWORD WINAPI mt_worker(LPVOID arg)
{
    LONG64 who = (LONG64)(INT_PTR)arg;
    for (;;)
        mt_hit(who);
    return 0;
}

/* Some arithmetic through a call, so the function saves registers (a one-byte `push`
 * first) and the steps change several registers. */
NOINLINE LONG64 mix(LONG64 a, LONG64 b)
{
    return a * 31 + b;
}

NOINLINE LONG64 step_here(LONG64 a, LONG64 b)
{
    LONG64 x = mix(a, b);
    LONG64 y = mix(x, a);
    step_result = x ^ y;
    return x + y;
}

/* The access violation: a write of 1 to the address 0x10. */
NOINLINE void write_at_0x10(void)
{
    *(volatile int *)(INT_PTR)0x10 = 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s steps|threads|av10\n", argc ? argv[0] : "livectl");
        return 2;
    }
    if (!strcmp(argv[1], "steps")) {
        step_here(3, 4);
        write_at_0x10();
        return 0;
    }
    if (!strcmp(argv[1], "threads")) {
        INT_PTR i;
        for (i = 1; i <= 4; i++)
            if (!CreateThread(NULL, 0, mt_worker, (LPVOID)i, 0, NULL))
                return 3;
        Sleep(INFINITE);
        return 0;
    }
    if (!strcmp(argv[1], "av10")) {
        write_at_0x10();
        return 0;
    }
    fprintf(stderr, "usage: %s steps|threads|av10\n", argv[0]);
    return 2;
}
