/* The Linux program the live-target tests debug under gdbserver (built with -O0
 * -fno-omit-frame-pointer, so every function starts with the one-byte `push rbp`).
 *
 *   live_target           a loop that calls a function (breakpoints, step over a call, gu),
 *                         bumps a global (watchpoints) and sleeps (a running target to
 *                         interrupt)
 *   live_target crash     the same, writing through a null pointer on the third iteration
 *                         (an access violation as the stop reason)
 *   live_target av10      writes through the address 0x10 at once (live analysis names it)
 *   live_target threads   four threads call ntdbg_mt_hit in a tight loop, so a breakpoint there
 *                         is hit by several threads at once; main waits for them forever */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

volatile long ntdbg_counter;

__attribute__((noinline)) void ntdbg_target_func(long x) { ntdbg_counter += x; }

__attribute__((noinline)) void ntdbg_crash(void) { *(volatile int *)0 = 1; }

__attribute__((noinline)) void ntdbg_write_at_0x10(void) { *(volatile int *)0x10 = 1; }

/* What the threads add up: a global, so the loop is not optimised away. */
volatile long ntdbg_mt_total;

/* Called by every worker in a tight loop. */
__attribute__((noinline)) void ntdbg_mt_hit(long who) { ntdbg_mt_total += who; }

static void *mt_worker(void *arg) {
    for (;;)
        ntdbg_mt_hit((long)arg);
    return 0;
}

/* Starts the four workers and waits for them forever. */
static int run_threads(void) {
    pthread_t workers[4];
    for (long i = 0; i < 4; i++)
        if (pthread_create(&workers[i], 0, mt_worker, (void *)(i + 1)) != 0)
            return 3;
    for (;;)
        pause();
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "threads") == 0)
        return run_threads();
    if (argc > 1 && strcmp(argv[1], "av10") == 0)
        ntdbg_write_at_0x10();
    int crash = argc > 1 && strcmp(argv[1], "crash") == 0;
    for (long i = 0;; i++) {
        ntdbg_target_func(1);
        if (crash && i == 2)
            ntdbg_crash();
        usleep(1000);
    }
    return 0;
}
