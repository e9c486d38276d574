"""No-op jobs through Python, for bench/measure/worker-libraries.ts: the jobclock_worker package
(`worker`) or the README loop written by hand with the standard library (`loop`).

Usage: python_worker.py MODE URL TOKEN MAX_JOBS DURATION_MS. It works until MAX_JOBS are finished,
DURATION_MS has passed or the queue is empty, then prints {"done": jobs finished, "ms": time from
its first request to the end of its work}, as one JSON line. Both modes run 4 loops (threads) or 4
Workers of 100 slots in this one process, as b.loop and b.runner do in theirs.
"""

import json
import logging
import sys
import threading
import time
import urllib.request

mode, url, token, max_jobs, duration_ms = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
HEADERS = {"content-type": "application/json", "authorization": f"Bearer {token}"}


def post(path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers=HEADERS, method="POST")
    with urllib.request.urlopen(req, timeout=60) as res:
        raw = res.read()
        return res.status, (json.loads(raw) if raw else None)


def hand_loop():
    """The README loop: lease 100 {types, wait}, do each job, report them in one POST /jobs/reports."""
    done = 0
    drained_at = None  # when the last job was reported: a loop still in a long-poll then is not work
    lock = threading.Lock()
    end = time.monotonic() + duration_ms / 1000

    def loop(i):
        nonlocal done, drained_at
        while time.monotonic() < end and done < max_jobs:
            status, body = post("/jobs/next", {"worker": f"py-loop-{i}", "types": ["noop"], "limit": 100, "wait": "1s"})
            if status == 204:
                return  # the queue is empty
            jobs = body["jobs"]
            reports = [{"id": j["id"], "leaseToken": j["leaseToken"], "outcome": "finished"} for j in jobs]  # no-op work
            status, body = post("/jobs/reports", {"reports": reports})
            ok = sum(1 for r in body["results"] if r["status"] == 200)
            with lock:
                done += ok
                if done >= max_jobs and drained_at is None:
                    drained_at = time.monotonic()

    t0 = time.monotonic()
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done, ((drained_at or time.monotonic()) - t0) * 1000


def library():
    from jobclock_worker import Worker  # PYTHONPATH=clients/python/src, or installed

    logging.basicConfig(level=logging.WARNING)
    workers = [Worker(url, token=token, handlers={"noop": lambda job, ctx: None}, concurrency=100, worker_id=f"py-worker-{i}", wait="1s") for i in range(4)]
    t0 = time.monotonic()
    for w in workers:
        w.start()
    end = t0 + duration_ms / 1000
    idle_since = None
    last = -1
    while True:
        finished = sum(w.stats["finished"] for w in workers)
        now = time.monotonic()
        if finished >= max_jobs:
            ms = (now - t0) * 1000  # drained: the clock stops at the last accepted report
            break
        if finished != last:
            last, idle_since = finished, now
        elif now - idle_since > 1.5:  # nothing left to lease
            ms = (idle_since - t0) * 1000
            break
        if now >= end:
            ms = None  # time-boxed: the clock stops after the stop, as b.runner's does
            break
        time.sleep(0.002)
    for w in workers:
        threading.Thread(target=w.stop, args=(10,)).start()
    for w in workers:
        while not w.stopped:
            time.sleep(0.005)
    if ms is None:
        ms = (time.monotonic() - t0) * 1000
    return sum(w.stats["finished"] for w in workers), ms


done, ms = hand_loop() if mode == "loop" else library()
print(json.dumps({"done": done, "ms": ms}))
