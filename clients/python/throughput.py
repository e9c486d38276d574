"""How many trivial jobs one Python worker process runs per second.

Start jobclock (`npm start`) and `pip install ./clients/python`, then:
`python3 clients/python/throughput.py [jobs] [concurrency]`
(defaults 2000 and 8). It enqueues that many jobs of a fresh type, runs a Worker with handlers
that do nothing, and prints the rate from the start of the worker to the last accepted report.
JOBCLOCK_URL and JOBCLOCK_TOKEN as for example.py (the token needs the admin role).
"""

import json
import os
import sys
import time
import urllib.request

from jobclock_worker import Worker

URL = os.environ.get("JOBCLOCK_URL", "http://127.0.0.1:3000")
TOKEN = os.environ.get("JOBCLOCK_TOKEN")


def post(path, body):
    headers = {"content-type": "application/json"}
    if TOKEN:
        headers["authorization"] = f"Bearer {TOKEN}"
    req = urllib.request.Request(URL + path, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req) as res:
        return json.load(res)


if __name__ == "__main__":
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    concurrency = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    job_type = f"throughput.{int(time.time() * 1000)}"
    for i in range(0, jobs, 1000):
        post("/jobs/batch", {"jobs": [{"type": job_type} for _ in range(min(1000, jobs - i))]})
    worker = Worker(URL, token=TOKEN, handlers={job_type: lambda job, ctx: None}, concurrency=concurrency, wait="1s")
    t0 = time.monotonic()
    worker.start()
    while worker.stats["finished"] < jobs:
        time.sleep(0.01)
    elapsed = time.monotonic() - t0
    worker.stop(5)
    print(f"{jobs} jobs, concurrency {concurrency}: {elapsed:.2f} s, {jobs / elapsed:.0f} jobs/s")
