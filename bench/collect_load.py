#!/usr/bin/env python3
"""Load for `ntdbg collect` from the Crashpad-protocol client (tools/crashpad_upload.py).

throughput URL N DUMP...   N different reports (the dumps in turn, each copy made unique),
                           bodies built first, then sent by --processes x --threads senders,
                           one connection per report as Crashpad's handler does; prints the
                           reports accepted per second.
latency URL DB RATE SECONDS DUMP...
                           RATE reports a second for SECONDS; each report's time from the
                           start of its upload until its analysis is in the SQLite database
                           DB (polled every 10 ms); prints p50, p90, p99 and the maximum.
"""

import multiprocessing
import os
import sqlite3
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import crashpad_upload  # noqa: E402

ANNOTATIONS = {"prod": "crashy", "ver": "1.0", "guid": "bench"}


def requests(n, dumps, salt):
    originals = [(os.path.basename(d), open(d, "rb").read()) for d in dumps]
    out = []
    for i in range(n):
        name, data = originals[i % len(originals)]
        out.append(crashpad_upload.body(ANNOTATIONS, data + b"bench %s %d" % (salt.encode(), i), name))
    return out


def sender(url, share, threads, start, results):
    """One process: its share of the requests over `threads` threads, after `start`."""
    lock = threading.Lock()
    refused = [0]
    next_index = [0]

    def run():
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= len(share):
                return
            status, _, _ = crashpad_upload.send(url, *share[i])
            if status != 200:
                with lock:
                    refused[0] += 1

    start.wait()
    pool = [threading.Thread(target=run) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    results.put(refused[0])


def throughput(url, n, dumps, processes=4, threads=8):
    reqs = requests(n, dumps, str(time.time()))
    start = multiprocessing.Event()
    results = multiprocessing.Queue()
    shares = [reqs[i::processes] for i in range(processes)]
    procs = [multiprocessing.Process(target=sender, args=(url, s, threads, start, results))
             for s in shares]
    for p in procs:
        p.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    start.set()
    refused = sum(results.get() for _ in procs)
    elapsed = time.monotonic() - t0
    for p in procs:
        p.join()
    body_bytes = sum(len(b) for b, _ in reqs) / len(reqs)
    print("throughput: %d reports (%.1f KiB gzip bodies on average) in %.2f s = %.0f accepted/s, %d refused"
          % (n, body_bytes / 1024, elapsed, (n - refused) / elapsed, refused))


def latency(url, db, rate, seconds, dumps):
    reqs = requests(int(rate * seconds), dumps, "lat%f" % time.time())
    started = {}
    answered = {}
    lock = threading.Lock()

    def one(i, req):
        t = time.monotonic()
        status, answer, _ = crashpad_upload.send(url, *req)
        with lock:
            if status == 200:
                started[answer] = t
                answered[answer] = time.monotonic()

    threads = []
    seen = {}
    sending = threading.Event()
    sending.set()

    def poll():
        # From the first upload on, not after the last: each report is seen as it lands.
        conn = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=30)
        deadline = time.monotonic() + seconds + 120
        while time.monotonic() < deadline:
            with lock:
                pending = [h for h in started if h not in seen]
            if not pending and not sending.is_set() and all(not t.is_alive() for t in threads):
                break
            if pending:
                query = "SELECT hash FROM dumps WHERE hash IN (%s)" % ",".join("?" * len(pending))
                for (h,) in conn.execute(query, pending):
                    seen.setdefault(h, time.monotonic())
            time.sleep(0.01)

    poller = threading.Thread(target=poll)
    poller.start()
    t0 = time.monotonic()
    for i, req in enumerate(reqs):
        wait = t0 + i / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        th = threading.Thread(target=one, args=(i, req))
        th.start()
        threads.append(th)
    sending.clear()
    poller.join()
    for t in threads:
        t.join()
    lat = sorted(seen[h] - started[h] for h in seen)
    acc = sorted(answered[h] - started[h] for h in answered)
    q = lambda v, p: v[min(len(v) - 1, int(p * len(v)))]
    print("latency: %d reports at %g/s; upload answered p50 %.0f ms; upload to report p50 %.0f ms, "
          "p90 %.0f ms, p99 %.0f ms, max %.0f ms; %d not analysed in time"
          % (len(reqs), rate, 1000 * statistics.median(acc), 1000 * q(lat, 0.5), 1000 * q(lat, 0.9),
             1000 * q(lat, 0.99), 1000 * lat[-1], len(started) - len(seen)))


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "throughput":
        throughput(sys.argv[2], int(sys.argv[3]), sys.argv[4:],
                   int(os.environ.get("PROCESSES", "4")), int(os.environ.get("THREADS", "8")))
    elif len(sys.argv) >= 6 and sys.argv[1] == "latency":
        latency(sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), sys.argv[6:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
