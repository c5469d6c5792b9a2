/*
 * hang.c - hangs and deadlocks without an exception, for ntdbg's wait chains,
 * !cs and !locks (built and run by tools/crashgen/samples.sh hang).
 *
 * Every mode ends with a watchdog thread that waits until the other threads
 * are blocked and writes the dump without an exception stream, leaving
 * itself out of it. The critical sections live in main's stack frame (a
 * MiniDumpNormal dump holds every thread's stack, not the heap or globals)
 * and are passed to the workers by pointer.
 *
 *   deadlock   two workers, two critical sections: worker i enters lock i,
 *              then lock (i+1) % 2; main waits for both workers.
 *   deadlock3  the same cycle with three workers and three locks.
 *   hang       one worker waits forever on an event nobody sets, one sleeps
 *              forever, main waits for the first worker's thread handle.
 *   srw        the two-thread ring with SRW locks: an SRW lock records no
 *              owner, so only the waits can be told.
 */
// crashgen-modes: deadlock deadlock3 hang srw
// crashgen-flags: -O1
#include "crashgen.h"

#define MAX_WORKERS 3

/* The locks of a deadlock mode, and the events that say each worker holds its
 * first lock. Lives in main's stack frame. */
struct lock_ring {
    int count;
    CRITICAL_SECTION locks[MAX_WORKERS];
    HANDLE holds_first[MAX_WORKERS];
};

/* One worker's view of the ring. */
struct worker_arg {
    struct lock_ring *ring;
    int index;
};

static volatile LONG blocked_workers;

/* Enters lock `index`, waits until every worker holds its first lock, then
 * enters the next lock of the ring: it never gets it. */
static DWORD WINAPI CRASHGEN_NOINLINE lock_worker(void *param)
{
    struct worker_arg *arg = param;
    struct lock_ring *ring = arg->ring;
    int first = arg->index;
    int second = (arg->index + 1) % ring->count;
    EnterCriticalSection(&ring->locks[first]);
    SetEvent(ring->holds_first[first]);
    WaitForMultipleObjects((DWORD)ring->count, ring->holds_first, TRUE, INFINITE);
    InterlockedIncrement(&blocked_workers);
    EnterCriticalSection(&ring->locks[second]);
    LeaveCriticalSection(&ring->locks[second]);
    LeaveCriticalSection(&ring->locks[first]);
    return 0;
}

/* Waits until `expected` workers are about to block, gives them time to
 * enter the wait, then writes the dump without itself. */
static DWORD WINAPI CRASHGEN_NOINLINE watchdog(void *param)
{
    LONG expected = (LONG)(INT_PTR)param;
    while (InterlockedCompareExchange(&blocked_workers, 0, 0) < expected)
        Sleep(10);
    Sleep(500);
    crashgen_write_dump(NULL, 0, TRUE);
    return 0;
}

static void CRASHGEN_NOINLINE run_ring(int count)
{
    struct lock_ring ring;
    struct worker_arg args[MAX_WORKERS];
    HANDLE workers[MAX_WORKERS];
    int i;
    ring.count = count;
    for (i = 0; i < count; i++) {
        InitializeCriticalSection(&ring.locks[i]);
        ring.holds_first[i] = CreateEventA(NULL, TRUE, FALSE, NULL);
        args[i].ring = &ring;
        args[i].index = i;
    }
    for (i = 0; i < count; i++)
        workers[i] = CreateThread(NULL, 0, lock_worker, &args[i], 0, NULL);
    CreateThread(NULL, 0, watchdog, (void *)(INT_PTR)count, 0, NULL);
    WaitForMultipleObjects((DWORD)count, workers, TRUE, INFINITE);
}

static void deadlock(void) { run_ring(2); }
static void deadlock3(void) { run_ring(3); }

/* Waits forever on an event that nobody sets. */
static DWORD WINAPI CRASHGEN_NOINLINE wait_forever_on_event(void *param)
{
    HANDLE never_set = param;
    InterlockedIncrement(&blocked_workers);
    WaitForSingleObject(never_set, INFINITE);
    return 0;
}

/* Sleeps forever. */
static DWORD WINAPI CRASHGEN_NOINLINE sleep_forever(void *param)
{
    (void)param;
    InterlockedIncrement(&blocked_workers);
    Sleep(INFINITE);
    return 0;
}

static void hang(void)
{
    HANDLE never_set = CreateEventA(NULL, TRUE, FALSE, NULL);
    HANDLE waiter = CreateThread(NULL, 0, wait_forever_on_event, never_set, 0, NULL);
    CreateThread(NULL, 0, sleep_forever, NULL, 0, NULL);
    CreateThread(NULL, 0, watchdog, (void *)(INT_PTR)2, 0, NULL);
    WaitForSingleObject(waiter, INFINITE);
}

/* Two SRW locks and the events that say each worker holds its first one. Lives
 * in main's stack frame. */
struct srw_pair {
    SRWLOCK locks[2];
    HANDLE holds_first[2];
};

/* One worker's view of the pair. */
struct srw_arg {
    struct srw_pair *pair;
    int index;
};

/* Acquires lock `index`, waits until both workers hold their first lock, then
 * acquires the other one: it never gets it. */
static DWORD WINAPI CRASHGEN_NOINLINE srw_worker(void *param)
{
    struct srw_arg *arg = param;
    struct srw_pair *pair = arg->pair;
    int first = arg->index;
    int second = 1 - arg->index;
    AcquireSRWLockExclusive(&pair->locks[first]);
    SetEvent(pair->holds_first[first]);
    WaitForMultipleObjects(2, pair->holds_first, TRUE, INFINITE);
    InterlockedIncrement(&blocked_workers);
    AcquireSRWLockExclusive(&pair->locks[second]);
    ReleaseSRWLockExclusive(&pair->locks[second]);
    ReleaseSRWLockExclusive(&pair->locks[first]);
    return 0;
}

static void srw(void)
{
    struct srw_pair pair;
    struct srw_arg args[2];
    HANDLE workers[2];
    int i;
    for (i = 0; i < 2; i++) {
        InitializeSRWLock(&pair.locks[i]);
        pair.holds_first[i] = CreateEventA(NULL, TRUE, FALSE, NULL);
        args[i].pair = &pair;
        args[i].index = i;
    }
    for (i = 0; i < 2; i++)
        workers[i] = CreateThread(NULL, 0, srw_worker, &args[i], 0, NULL);
    CreateThread(NULL, 0, watchdog, (void *)(INT_PTR)2, 0, NULL);
    WaitForMultipleObjects(2, workers, TRUE, INFINITE);
}

static const struct crashgen_mode modes[] = {
    {"deadlock", deadlock},
    {"deadlock3", deadlock3},
    {"hang", hang},
    {"srw", srw},
};

int main(int argc, char **argv)
{
    return crashgen_main(argc, argv, modes, (int)(sizeof modes / sizeof modes[0]));
}
