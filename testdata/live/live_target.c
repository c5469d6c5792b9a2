/* The Linux program the live-target tests debug under gdbserver: a loop that calls a
 * function (breakpoints, step over a call, gu), bumps a global (watchpoints) and sleeps
 * (a running target to interrupt). With the argument "crash" it writes through a null
 * pointer on the third iteration (an access violation as the stop reason). */
#include <string.h>
#include <unistd.h>

volatile long ntdbg_counter;

__attribute__((noinline)) void ntdbg_target_func(long x) { ntdbg_counter += x; }

__attribute__((noinline)) void ntdbg_crash(void) { *(volatile int *)0 = 1; }

int main(int argc, char **argv) {
    int crash = argc > 1 && strcmp(argv[1], "crash") == 0;
    for (long i = 0;; i++) {
        ntdbg_target_func(1);
        if (crash && i == 2)
            ntdbg_crash();
        usleep(1000);
    }
    return 0;
}
