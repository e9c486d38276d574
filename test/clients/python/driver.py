"""Drives the installed jobclock_worker package (clients/python) for test/clients/python-worker.test.ts.

Usage: driver.py SCENARIO URL TOKEN OUT. Every line of OUT is a JSON event the test reads
(`ready` once the worker runs, `ran` for each handler execution, ...). The worker's log goes to stderr.
"""
import json
import logging
import os
import sys
import threading
import time

from jobclock_worker import FinalFailure, Result, RetryLater, Snooze, Worker

scenario, url, token, out_path = sys.argv[1:5]
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(threadName)s %(levelname)s %(message)s")
out_lock = threading.Lock()
out = open(out_path, "a", buffering=1)


def emit(kind, **fields):
    with out_lock:
        out.write(json.dumps({"event": kind, **fields}) + "\n")
        out.flush()


def count(job, ctx):
    emit("ran", id=job["id"], worker=worker_id)
    time.sleep(0.002 * (int(job["id"]) % 5))
    return {"by": worker_id}


def long(job, ctx):
    emit("ran", id=job["id"])
    if ctx.cancelled.wait(float(job["args"]["seconds"])):
        raise RuntimeError(f"cancelled: {ctx.cancel_reason}")
    return {"slept": job["args"]["seconds"]}


def cancellable(job, ctx):
    emit("ran", id=job["id"])
    if not ctx.cancelled.wait(15):
        return {"cancelled": False}
    emit("cancelled", id=job["id"], reason=ctx.cancel_reason)
    return {"cancelled": True, "reason": ctx.cancel_reason}


def periodic(job, ctx):
    before = job["taskState"]
    n = (before or {}).get("runs", 0) + 1
    emit("ran", id=job["id"], taskState=before)
    if n % 2 == 1:
        ctx.save_state({"runs": n})  # one way: save_state
        return {"run": n}
    return Result({"run": n}, state={"runs": n})  # the other: Result(value, state=...)


def quick(job, ctx):
    emit("ran", id=job["id"])
    ctx.cancelled.wait(10)  # until stop() says so
    time.sleep(0.3)  # wrapping up, inside stop()'s timeout
    return {"quick": True, "reason": ctx.cancel_reason}


def stubborn(job, ctx):
    emit("ran", id=job["id"])
    time.sleep(30)  # ignores ctx.cancelled: stop() has to give its lease back
    return {"stubborn": True}


def busy(job, ctx):
    emit("ran", id=job["id"])
    raise RetryLater("30s", "the upstream is busy")


def final(job, ctx):
    emit("ran", id=job["id"])
    raise FinalFailure("the arguments can never work")


def sleepy(job, ctx):
    emit("ran", id=job["id"], checkpoint=ctx.checkpoint)
    if ctx.checkpoint is None:
        ctx.save_state({"page": 3})
        raise Snooze("1h", "the upstream asked for an hour")
    return {"resumed": ctx.checkpoint}


def deep(job, ctx):
    emit("ran", id=job["id"])
    result = {}
    for _ in range(40):  # deeper than the 32 levels jobclock accepts: the report is refused
        result = {"in": result}
    return result


def page(job, ctx):
    emit("ran", id=job["id"])
    return {"url": f"s3://pdf/{job['args']['page']}"}


def merge(job, ctx):
    emit("ran", id=job["id"], dependencies=ctx.dependencies)
    return {"urls": [d["result"]["url"] for d in ctx.dependencies]}


def limited(job, ctx):
    emit("ran", id=job["id"])
    time.sleep(0.01)


handlers = {
    "count": {"py.count": count},
    "limited": {"py.limited": limited},
    "long": {"py.long": long},
    "cancel": {"py.cancel": cancellable, "py.deadline": cancellable},
    "periodic": {"py.periodic": periodic},
    "stop": {"py.quick": quick, "py.stubborn": stubborn},
    "retry": {"py.busy": busy, "py.deep": deep, "py.count": count, "py.final": final, "py.sleepy": sleepy},
    "graph": {"py.page": page, "py.merge": merge},
}[scenario]
worker_id = f"py-{scenario}-{os.getpid()}"
lease = {"long": "1s", "cancel": "3s"}.get(scenario, "30s")
worker = Worker(url, token=token or None, handlers=handlers, concurrency=8, lease=lease, worker_id=worker_id, wait="5s")

if scenario == "stop":
    worker.start()
    emit("ready")
    want = int(sys.argv[5])
    end = time.time() + 15
    while time.time() < end and sum(1 for line in open(out_path) if '"ran"' in line) < want:
        time.sleep(0.05)
    t0 = time.time()
    worker.stop(timeout=1.5)
    emit("stopped", seconds=round(time.time() - t0, 3), stats=worker.stats)
    sys.exit(0)

emit("ready")
worker.run(stop_timeout=5)
emit("stopped", stats=worker.stats)
