"""A runnable example: start jobclock (`npm start`), `pip install ./clients/python`, then
`python3 clients/python/example.py`.

It enqueues a few jobs of two types and runs a worker for them until Ctrl-C (which stops it
cleanly: running handlers get a few seconds, the rest are given back). Environment:
JOBCLOCK_URL (default http://127.0.0.1:3000) and JOBCLOCK_TOKEN (a worker or admin token, when
the server has JOBCLOCK_TOKENS set; enqueueing needs a producer or admin token).
"""

import json
import logging
import os
import random
import time
import urllib.request

from jobclock_worker import RetryLater, Worker

URL = os.environ.get("JOBCLOCK_URL", "http://127.0.0.1:3000")
TOKEN = os.environ.get("JOBCLOCK_TOKEN")


def resize(job, ctx):
    """A job that takes a while, shows progress and stops early when told to."""
    steps = job["args"].get("steps", 5)
    for step in range(steps):
        if ctx.cancelled.is_set():  # cancelled, past its deadline, or the worker is stopping
            if ctx.cancel_reason == "stopping":
                raise RetryLater(0, "the worker is stopping")  # runs again at once elsewhere
            return {"stoppedAt": step}
        time.sleep(0.5)
        ctx.progress({"done": step + 1, "of": steps})
    return {"resized": job["args"]["image"]}


def notify(job, ctx):
    """A job that sometimes asks to be tried again later."""
    if random.random() < 0.3:
        raise RetryLater("5s", "the mail server said 451, try again later")
    return {"notified": job["args"]["to"]}


def enqueue(jobs):
    headers = {"content-type": "application/json"}
    if TOKEN:
        headers["authorization"] = f"Bearer {TOKEN}"
    req = urllib.request.Request(f"{URL}/jobs/batch", data=json.dumps({"jobs": jobs}).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req) as res:
        return [j["id"] for j in json.load(res)["jobs"]]


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ids = enqueue(
        [{"type": "image.resize", "args": {"image": f"photo-{i}.jpg", "steps": 4}} for i in range(3)]
        + [{"type": "mail.notify", "args": {"to": f"user{i}@example.com"}} for i in range(5)]
    )
    logging.info("enqueued jobs %s; see them with: curl -s %s/jobs/%s", ids, URL, ids[0])
    Worker(URL, token=TOKEN, handlers={"image.resize": resize, "mail.notify": notify}, concurrency=4, lease="10s").run()
