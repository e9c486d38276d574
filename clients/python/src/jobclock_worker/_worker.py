"""A jobclock worker for Python: long-poll, heartbeat, cancel, state, batched reports, clean stop.

Standard library only (Python 3.9+): `pip install ./clients/python` (the package jobclock_worker).

    from jobclock_worker import Worker, RetryLater

    def send_mail(job, ctx):
        if ctx.cancelled.is_set():
            return None
        ...                                  # do the work; look at ctx.cancelled now and then
        return {"sent": True}                # the job's result

    Worker("http://127.0.0.1:3000", token=None, handlers={"mail.send": send_mail}).run()

How it works:

- One thread long-polls ``POST /jobs/next`` with ``wait`` for the handlers' types only and leases
  at most as many jobs as it has free slots (``concurrency``). A slot frees when its handler
  returns; leasing pauses while 1000 reports wait to be accepted.
- Each leased job runs its handler ``handler(job, ctx)`` on a handler thread, kept for the next
  job once it returns, never more of them than jobs running at once (daemon threads: a handler that
  never returns does not keep the process alive after ``stop()``).
- One heartbeat thread finds the jobs due a heartbeat, at about a third of each one's lease, and
  beats them on a few threads (``heartbeat_threads``), sending the latest ``ctx.progress(...)``
  and ``ctx.save_state(...)``. It sets ``ctx.cancelled`` when a heartbeat
  answers ``cancel: true`` (the job was cancelled or its deadline passed), when the job's deadline
  passes on this machine's clock, when the lease is lost (409/404) and on ``stop()``.
- One reporter thread sends the outcomes in batches through ``POST /jobs/reports``, and leases
  with each batch (``next``) as many jobs as there are free slots beside the long-poll: they are
  leased in the same transaction as the reports, so under a concurrency limit the slots the
  reported jobs held pass straight on (a retried batch leases nothing). A report
  answered 409 means the lease was lost (it expired, or the job timed out): it is logged and not
  retried. A 503 or a connection error is retried with capped exponential backoff. A report
  jobclock refuses (400, e.g. a result nested too deep) is sent again as a failure with
  ``error.kind = "report-refused"``; the rest of its batch is accepted.
- The handler's return value is the job's result (``None`` reports no result). To hand state to the
  next run of a periodic task call ``ctx.save_state(obj)`` (sent with the next heartbeat and with
  the report) or return ``Result(value, state=obj)``. A plain dict is always the result as it is,
  even one with a ``"state"`` key, so a result such as ``{"state": "sent"}`` never turns into task
  state by accident.
- An exception reports ``failed`` with ``{"message", "type"}`` as the error; a ``RetryLater``
  carries ``retryIn`` (the job is queued again after that long if it has attempts left).
- ``Snooze(retry_in)`` gives the lease back without counting the attempt: the job runs again after
  ``retry_in`` (with what ``ctx.save_state`` saved as its checkpoint); ``FinalFailure`` fails it
  for good. A one-shot job's next attempt reads the last saved state as ``ctx.checkpoint``.
- ``stop(timeout)`` stops leasing (an outstanding long-poll is cut; jobclock gives back a lease
  whose worker disconnected before it received it), sets ``ctx.cancelled`` of every running job
  (``cancel_reason`` ``"stopping"``), waits up to ``timeout`` seconds for the handlers to return
  (their outcomes are reported as usual), then gives back the leases of those still running
  (``POST /jobs/{id}/release``: each is queued again at once, to run elsewhere, and the attempt
  is not counted). Whatever such a handler returns later is ignored. A handler told ``"stopping"`` that cannot finish should raise
  ``RetryLater(0)`` (run again at once elsewhere) or return what it has (after ``ctx.save_state``).
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import os
import queue
import random
import re
import signal
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

__all__ = ["Worker", "JobContext", "Result", "RetryLater", "FinalFailure", "Snooze", "Job", "Handler", "Duration", "parse_duration", "format_duration"]

log = logging.getLogger("jobclock_worker")

Job = Dict[str, Any]
Handler = Callable[[Job, "JobContext"], Any]
Duration = Union[str, int, float]

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_MAX_REPORT_BATCH = 1000
_SENTINEL = object()


def parse_duration(value: Duration) -> float:
    """Seconds of a duration: a number of seconds, or a string such as ``"500ms"``, ``"1h30m"``, ``"2d"``."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, (int, float)):
        if value < 0 or math.isnan(value):
            raise ValueError(f"a duration cannot be negative: {value!r}")
        return float(value)
    text = value.strip()
    if not text or _GO_DURATION.sub("", text) != "":
        raise ValueError(f'not a duration: {value!r} (write e.g. "30s", "500ms", "1h30m")')
    return sum(float(n) * _UNITS[u] for n, u in _GO_DURATION.findall(text))


def format_duration(seconds: float) -> str:
    """A duration string jobclock accepts, in whole milliseconds."""
    return f"{max(0, int(round(seconds * 1000)))}ms"


def _parse_time(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc).timestamp()


class RetryLater(Exception):
    """Raise it from a handler to report the job failed and have it queued again after ``retry_in``.

    ``retry_in`` is a duration (``"30s"`` or seconds). With no attempts left the job ends failed.
    """

    def __init__(self, retry_in: Duration, message: str = "retry later") -> None:
        super().__init__(message)
        self.retry_in = format_duration(parse_duration(retry_in)) if not isinstance(retry_in, str) else retry_in
        parse_duration(self.retry_in)  # reject a bad duration here, not at the server
        self.message = message


class FinalFailure(Exception):
    """Raise it from a handler when retrying cannot help (bad arguments, say): the job is reported
    failed for good (``final: true``), whatever attempts remain. A server from before final
    failures gets a plain failure instead (retried while attempts remain).
    """

    def __init__(self, message: str = "failed for good") -> None:
        super().__init__(message)
        self.message = message


class Snooze(Exception):
    """Raise it from a handler for "not now, try again in ``retry_in``, and don't count it": the
    lease is given back (``POST /jobs/{id}/release`` with ``retryIn``), the attempt is not counted,
    and state saved with ``ctx.save_state`` goes with it (the job's checkpoint).

    ``retry_in`` is a duration (``"10m"`` or seconds).
    """

    def __init__(self, retry_in: Duration, message: str = "snoozed") -> None:
        super().__init__(message)
        self.retry_in = format_duration(parse_duration(retry_in)) if not isinstance(retry_in, str) else retry_in
        parse_duration(self.retry_in)  # reject a bad duration here, not at the server
        self.message = message


class Result:
    """A handler's return value carrying both the job's result and the task state for its next run."""

    def __init__(self, value: Any = None, state: Any = _SENTINEL) -> None:
        self.value = value
        self.state = state


class _Transient(Exception):
    """A 503 or a connection error: worth trying again."""


class JobContext:
    """What a handler gets next to the job: cancellation, progress and state.

    Attributes:
        job: the leased job (also the handler's first argument).
        cancelled: a ``threading.Event`` set when the job was cancelled, its deadline passed, its
            lease was lost, or the worker is stopping. Check it often; return when it is set.
        cancel_reason: why ``cancelled`` was set (``"cancel"``, ``"deadline"``, ``"lease-lost"``,
            ``"stopping"``), or ``None``.
    """

    def __init__(self, job: Job, lease_seconds: float, now: float) -> None:
        self.job = job
        self.id: str = str(job["id"])
        self.lease_token: str = job["leaseToken"]
        self.cancelled = threading.Event()
        self.cancel_reason: Optional[str] = None
        self.deadline: Optional[float] = _parse_time(job.get("deadline"))
        self._lock = threading.Lock()
        self._progress: Any = _SENTINEL
        self._state: Any = _SENTINEL
        self._interval = max(lease_seconds / 3.0, 0.2)
        self.next_beat = now + self._interval
        self.lost = False  # lease lost (409/404): do not report
        self.abandoned = False  # given back by stop(): ignore the handler's outcome
        self.done = False  # handler returned; report queued
        self.beating = False  # a heartbeat of this job is on its way
        self.release_fields: Dict[str, Any] = {}  # a Snooze's retryIn and state, sent with the give-back

    @property
    def task_state(self) -> Any:
        """The state the last run of this job's periodic task saved (``job["taskState"]``)."""
        return self.job.get("taskState")

    @property
    def checkpoint(self) -> Any:
        """The state an earlier attempt of this one-shot job saved (``job["checkpoint"]``), or None."""
        return self.job.get("checkpoint")

    @property
    def dependencies(self) -> list:
        """The jobs this one ran after, each ``{"id", "type", "state", "result"}`` (``job["dependencies"]``;
        empty for a job without dependencies): the merge step reads the page results here."""
        return self.job.get("dependencies") or []

    def progress(self, obj: Any) -> None:
        """Record progress (any JSON); sent with the next heartbeat and shown on the job."""
        json.dumps(obj)
        with self._lock:
            self._progress = obj

    def save_state(self, obj: Any) -> None:
        """Save state (any JSON) for the next run of this job's periodic task, or, for a one-shot
        job, as its checkpoint for its next attempt (``ctx.checkpoint`` there).

        Sent with the next heartbeat (so it survives a crash after that) and with the report.
        """
        json.dumps(obj)
        with self._lock:
            self._state = obj

    def _cancel(self, reason: str) -> None:
        if not self.cancelled.is_set():
            self.cancel_reason = reason
            self.cancelled.set()

    def _beat_fields(self) -> Dict[str, Any]:
        with self._lock:
            fields: Dict[str, Any] = {}
            if self._progress is not _SENTINEL:
                fields["progress"] = self._progress
            if self._state is not _SENTINEL:
                fields["state"] = self._state
            return fields

    def _saved_state(self) -> Any:
        with self._lock:
            return self._state


class Worker:
    """Runs handlers for job types against a jobclock server.

    Args:
        url: the server, e.g. ``"http://127.0.0.1:3000"``.
        token: a bearer token with the ``worker`` (or ``admin``) role, or ``None``.
        handlers: job type -> ``handler(job, ctx)``. Only these types are leased.
        concurrency: how many jobs run at once (leases never exceed the free slots).
        lease: lease length asked for at lease time (at least 1 s); heartbeats come at a third of it.
        worker_id: the name the server records on each job (default ``<host>-<pid>-<random>``).
        wait: how long one long-poll waits for a job (at most 60 s).
        groups: lease only jobs of these groups (default all).
        report_linger: how long the reporter waits to gather more reports into one request (it
            sends at once when no handler is left running).
        max_backoff: the cap, in seconds, of the backoff after a 503 or a connection error.
        request_timeout: timeout in seconds of a request other than the long-poll.
        heartbeat_threads: how many heartbeats may be on their way at once (default 4).
        logger: a ``logging.Logger`` (default ``logging.getLogger("jobclock_worker")``).
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        handlers: Optional[Mapping[str, Handler]] = None,
        concurrency: int = 8,
        lease: Duration = "30s",
        worker_id: Optional[str] = None,
        *,
        wait: Duration = "30s",
        groups: Optional[Sequence[str]] = None,
        report_linger: float = 0.02,
        max_backoff: float = 10.0,
        request_timeout: float = 30.0,
        heartbeat_threads: int = 4,
        logger: Optional[logging.Logger] = None,
    ) -> None:
        if not handlers:
            raise ValueError("handlers: give at least one job type and its handler")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.url = url.rstrip("/")
        self.token = token
        self.handlers: Dict[str, Handler] = dict(handlers)
        self.concurrency = int(concurrency)
        self.lease_seconds = parse_duration(lease)
        if self.lease_seconds < 1:
            raise ValueError("lease must be at least 1s")
        self.wait_seconds = min(parse_duration(wait), 60.0)
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.groups = list(groups) if groups else None
        self.report_linger = report_linger
        self.max_backoff = max_backoff
        self.request_timeout = request_timeout
        self.heartbeat_threads = max(1, min(int(heartbeat_threads), self.concurrency))
        self.log = logger or log

        self._cond = threading.Condition()
        self._active: Dict[str, JobContext] = {}  # job id -> context, until its report is answered
        self._running = 0  # handlers not yet returned (and not abandoned)
        self._reports: List[Tuple[JobContext, Dict[str, Any]]] = []
        self._reports_in_flight = 0  # reports and give-backs on their way
        self._reserved = 0  # slots promised to the jobs a report batch on its way asks for
        self._polling = 0  # the limit of the long-poll on its way
        self._next_on_reports = True  # False once a server refused ``next`` (older than it)
        self._final_on_reports = True  # False once a server refused ``final`` (older than it)
        self._releases: List[JobContext] = []
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._started = False
        self._threads: List[threading.Thread] = []
        self._poll_conn: Optional[http.client.HTTPConnection] = None
        self._poll_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._handoff: "queue.SimpleQueue[Optional[JobContext]]" = queue.SimpleQueue()
        self._pool_lock = threading.Lock()
        self._pool_size = 0  # handler threads started
        self._pool_idle = 0  # of them, waiting for a job
        self.stats = {"leased": 0, "finished": 0, "failed": 0, "given_back": 0, "lost": 0}

    # ------------------------------------------------------------------ life cycle

    def start(self) -> None:
        """Start leasing in background threads and return."""
        with self._cond:
            if self._started:
                raise RuntimeError("this Worker was already started")
            self._started = True
        for name, target in (("lease", self._lease_loop), ("heartbeat", self._heartbeat_loop), ("report", self._report_loop)):
            t = threading.Thread(target=target, name=f"jobclock-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        self.log.info("worker %s started: types %s, concurrency %d, lease %ss", self.worker_id, sorted(self.handlers), self.concurrency, self.lease_seconds)

    def run(self, stop_timeout: float = 25.0) -> None:
        """Start and block until ``stop()``; from the main thread, SIGINT and SIGTERM call ``stop(stop_timeout)``."""
        previous: Dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():

            def on_signal(signum: int, _frame: Any) -> None:
                self.log.info("signal %d: stopping", signum)
                threading.Thread(target=self.stop, args=(stop_timeout,), name="jobclock-stop", daemon=True).start()

            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, on_signal)
        try:
            self.start()
            while not self._stopped.wait(0.2):
                pass
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def stop(self, timeout: float = 25.0) -> None:
        """Stop leasing, wait up to ``timeout`` s for running handlers, give back the rest, send all reports.

        Idempotent; a second call waits for the first to finish.
        """
        if self._stopping.is_set():
            self._stopped.wait()
            return
        self._stopping.set()
        self.log.info("worker %s stopping: waiting up to %ss for %d running job(s)", self.worker_id, timeout, self._running)
        end = time.monotonic() + timeout
        self._cut_long_poll()
        lease_thread = self._threads[0] if self._threads else None
        if lease_thread is not None and lease_thread is not threading.current_thread():
            lease_thread.join(timeout=5.0)  # jobs in an answer that beat the cut are given back first
        with self._cond:
            for ctx in self._active.values():
                if not ctx.done:
                    ctx._cancel("stopping")  # a handler that can wrap up (save state, return) does so now
            self._cond.notify_all()
            while self._running > 0 and time.monotonic() < end:
                self._cond.wait(min(0.1, max(0.0, end - time.monotonic())))
            stragglers = [c for c in self._active.values() if not c.done and not c.lost]
            for ctx in stragglers:
                ctx.abandoned = True
                ctx._cancel("stopping")
                self._running -= 1
                self._queue_release(ctx)
            if stragglers:
                self.log.warning("gave back %d job(s) still running after %ss: %s", len(stragglers), timeout, [c.id for c in stragglers])
        # let the reporter send what is queued (bounded, so a dead server cannot hold the stop forever)
        flush_end = time.monotonic() + max(5.0, self.request_timeout)
        with self._cond:
            while self._threads and (self._reports or self._releases or self._reports_in_flight) and time.monotonic() < flush_end:
                self._cond.wait(0.05)
            unsent = len(self._reports) + len(self._releases)
        if unsent:
            self.log.error("stopped with %d report(s) unsent: their jobs run again when their leases expire", unsent)
        self._stopped.set()
        with self._cond:
            self._cond.notify_all()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=2.0)
        with self._pool_lock:  # the idle handler threads end; busy ones are daemon threads
            for _ in range(self._pool_idle):
                self._handoff.put(None)
            self._pool_idle = 0
        self.log.info("worker %s stopped: %s", self.worker_id, self.stats)

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    # ------------------------------------------------------------------ HTTP

    def _headers(self) -> Dict[str, str]:
        h = {"content-type": "application/json", "accept": "application/json"}
        if self.token:
            h["authorization"] = f"Bearer {self.token}"
        return h

    def _request(self, path: str, body: Any, timeout: Optional[float] = None) -> Tuple[int, Any]:
        """POST JSON; (status, parsed body). Raises _Transient on a 503 or a connection error."""
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), headers=self._headers(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.request_timeout) as res:
                return res.status, _json_of(res.read())
        except urllib.error.HTTPError as e:
            payload = _json_of(e.read())
            if e.code in (502, 503, 504):
                raise _Transient(f"{path}: {e.code} {_detail(payload)}") from None
            return e.code, payload
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            raise _Transient(f"{path}: {e}") from None

    def _long_poll(self, body: Dict[str, Any]) -> Tuple[int, Any]:
        """POST /jobs/next on a connection stop() can cut."""
        parts = urllib.parse.urlsplit(self.url + "/jobs/next")
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = cls(parts.hostname or "127.0.0.1", parts.port, timeout=self.wait_seconds + self.request_timeout)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            conn.connect()  # before it is registered, so that stop() always finds a socket to cut
            with self._poll_lock:
                if self._stopping.is_set():
                    return 204, None
                self._poll_conn = conn
            conn.request("POST", path, body=json.dumps(body).encode(), headers=self._headers())
            res = conn.getresponse()
            payload = _json_of(res.read())
            if res.status in (502, 503, 504):
                raise _Transient(f"/jobs/next: {res.status} {_detail(payload)}")
            return res.status, payload
        except (OSError, http.client.HTTPException) as e:
            if self._stopping.is_set():
                return 204, None
            raise _Transient(f"/jobs/next: {e}") from None
        finally:
            with self._poll_lock:
                self._poll_conn = None
            conn.close()

    def _cut_long_poll(self) -> None:
        with self._poll_lock:
            conn = self._poll_conn
            if conn is not None and conn.sock is not None:
                try:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    # ------------------------------------------------------------------ leasing

    def _free_slots(self) -> int:
        """Slots without a running handler; none while a full batch of reports waits to be accepted.

        A job whose handler returned frees its slot at once (its report goes in the next batch), so
        the worker is not idle for a report's round trip; the cap keeps a server that accepts no
        reports from piling them up without bound.
        """
        if len(self._reports) + self._reports_in_flight >= _MAX_REPORT_BATCH:
            return 0
        return self.concurrency - self._running - self._reserved

    def _leases_with_reports(self) -> bool:
        """Reports wait to be sent and will lease the next jobs themselves; the caller holds self._cond."""
        return bool(self._reports) and self._next_on_reports and not self._stopping.is_set()

    def _lease_loop(self) -> None:
        backoff = _Backoff(self.max_backoff)
        while not self._stopping.is_set():
            with self._cond:
                while (self._free_slots() <= 0 or self._leases_with_reports()) and not self._stopping.is_set():
                    self._cond.wait(0.5)
                free = self._free_slots()
                self._polling = min(free, 100)
            if self._stopping.is_set():
                break
            body: Dict[str, Any] = {
                "worker": self.worker_id,
                "types": sorted(self.handlers),
                "wait": format_duration(self.wait_seconds),
                "lease": format_duration(self.lease_seconds),
                "limit": min(free, 100),
            }
            if self.groups:
                body["groups"] = self.groups
            try:
                try:
                    status, payload = self._long_poll(body)
                finally:
                    with self._cond:
                        self._polling = 0
            except _Transient as e:
                delay = backoff.next()
                self.log.warning("lease failed (%s); retrying in %.1fs", e, delay)
                self._stopping.wait(delay)
                continue
            except Exception:  # a bug here must not end leasing silently
                delay = backoff.next()
                self.log.exception("lease failed; retrying in %.1fs", delay)
                self._stopping.wait(delay)
                continue
            if status == 204:
                backoff.reset()
                continue
            if status != 200:
                delay = backoff.next()
                self.log.error("lease answered %d: %s; retrying in %.1fs", status, _detail(payload), delay)
                self._stopping.wait(delay)
                continue
            backoff.reset()
            for job in payload.get("jobs", []):
                self._begin(job)

    def _begin(self, job: Job) -> None:
        ctx = JobContext(job, self.lease_seconds, time.monotonic())
        with self._cond:
            self._count("leased")
            self._active[ctx.id] = ctx
            if self._stopping.is_set():
                # leased while stop() was cutting the poll: give it back at once
                ctx.abandoned = True
                ctx._cancel("stopping")
                self._queue_release(ctx)
                return
            self._running += 1
        self._dispatch(ctx)

    def _dispatch(self, ctx: JobContext) -> None:
        """Hands a job to an idle handler thread, or to a new one when none is idle.

        Handler threads are kept for the next jobs rather than started per job (a thread's start
        cost more than a no-op job); they are daemon threads, so a handler that never returns
        does not keep the process alive after ``stop()``. There are never more of them than jobs
        running at once.
        """
        with self._pool_lock:
            start = self._pool_idle == 0
            if not start:
                self._pool_idle -= 1
            else:
                self._pool_size += 1
                name = f"jobclock-handler-{self._pool_size}"
        self._handoff.put(ctx)
        if start:
            threading.Thread(target=self._handler_thread, name=name, daemon=True).start()

    def _handler_thread(self) -> None:
        while True:
            ctx = self._handoff.get()
            if ctx is None:
                return
            self._run_handler(ctx)
            with self._pool_lock:
                self._pool_idle += 1

    def _run_handler(self, ctx: JobContext) -> None:
        job = ctx.job
        handler = self.handlers.get(job.get("type", ""))
        report: Dict[str, Any]
        try:
            if handler is None:
                raise LookupError(f"no handler for job type {job.get('type')!r}")
            value = handler(job, ctx)
            state = ctx._saved_state()
            if isinstance(value, Result):
                if value.state is not _SENTINEL:
                    state = value.state
                value = value.value
            report = {"outcome": "finished"}
            if value is not None:
                report["result"] = value
            if state is not _SENTINEL:
                report["state"] = state
            json.dumps(report)
        except Snooze as e:
            # not a report: the lease is given back with retryIn (and the state, below)
            report = {"outcome": "snoozed", "retryIn": e.retry_in}
            self.log.info("job %s (%s) snoozes for %s: %s", ctx.id, job.get("type"), e.retry_in, e.message)
        except RetryLater as e:
            report = {"outcome": "failed", "error": {"message": e.message, "type": "RetryLater"}, "retryIn": e.retry_in}
            self.log.info("job %s (%s) asks to be retried in %s: %s", ctx.id, job.get("type"), e.retry_in, e.message)
        except FinalFailure as e:
            report = {"outcome": "failed", "error": {"message": e.message, "type": "FinalFailure"}}
            if self._final_on_reports:
                report["final"] = True
            self.log.warning("job %s (%s) failed for good: %s", ctx.id, job.get("type"), e.message)
        except Exception as e:
            report = {"outcome": "failed", "error": {"message": str(e) or type(e).__name__, "type": type(e).__name__}}
            self.log.warning("job %s (%s) failed: %s: %s", ctx.id, job.get("type"), type(e).__name__, e)
        if report["outcome"] != "finished":
            state = ctx._saved_state()
            if state is not _SENTINEL:
                report["state"] = state
        with self._cond:
            if ctx.abandoned:
                self.log.info("job %s returned after it was given back; its outcome is dropped", ctx.id)
                return
            self._running -= 1
            if ctx.lost:
                self._active.pop(ctx.id, None)
                self._cond.notify_all()
                return
            if report["outcome"] == "snoozed":
                ctx.release_fields = {k: v for k, v in report.items() if k != "outcome"}
                self._queue_release(ctx)
            else:
                self._queue_report(ctx, report)

    # ------------------------------------------------------------------ heartbeats

    def _heartbeat_loop(self) -> None:
        """Finds the jobs due a heartbeat and beats them on a few threads (``heartbeat_threads``), so
        that hundreds of jobs on a short lease do not wait for one another's round trips."""
        with ThreadPoolExecutor(max_workers=self.heartbeat_threads, thread_name_prefix="jobclock-beat") as pool:
            while not self._stopped.is_set():
                now = time.monotonic()
                wall = time.time()
                with self._cond:
                    due = [c for c in self._active.values() if not c.lost and not c.abandoned and not c.beating and c.next_beat <= now]
                    for c in self._active.values():
                        if c.deadline is not None and wall >= c.deadline and not c.done:
                            c._cancel("deadline")
                    for c in due:
                        c.beating = True
                for ctx in due:
                    pool.submit(self._beat_once, ctx)
                self._stopped.wait(0.05)

    def _beat_once(self, ctx: JobContext) -> None:
        try:
            if not self._stopped.is_set():
                self._beat(ctx)
        except Exception:  # a bug here must not stop the job's heartbeats for good
            self.log.exception("heartbeat of job %s failed", ctx.id)
            ctx.next_beat = time.monotonic() + 1.0
        finally:
            ctx.beating = False

    def _beat(self, ctx: JobContext) -> None:
        body = {"leaseToken": ctx.lease_token, "lease": format_duration(self.lease_seconds), **ctx._beat_fields()}
        try:
            # one thread beats every job: a hung request must not hold the others past their leases
            timeout = max(1.0, min(self.request_timeout, ctx._interval))
            status, payload = self._request(f"/jobs/{urllib.parse.quote(ctx.id)}/heartbeat", body, timeout=timeout)
        except _Transient as e:
            ctx.next_beat = time.monotonic() + min(1.0, ctx._interval / 2)
            self.log.warning("heartbeat of job %s failed (%s); trying again", ctx.id, e)
            return
        ctx.next_beat = time.monotonic() + ctx._interval
        if status == 200:
            if payload.get("cancel"):
                reason = "deadline" if payload.get("deadline") and (_parse_time(payload["deadline"]) or 0) <= time.time() else "cancel"
                if not ctx.cancelled.is_set():
                    self.log.info("job %s: the server says stop (%s)", ctx.id, reason)
                ctx._cancel(reason)
            deadline = _parse_time(payload.get("deadline"))
            if deadline is not None:
                ctx.deadline = deadline
        elif status in (404, 409):
            with self._cond:
                if self._active.get(ctx.id) is not ctx:
                    return  # its report landed while this heartbeat was on the way
                ctx.lost = True
                if ctx.done:
                    self._active.pop(ctx.id, None)
                    self._reports = [(c, r) for c, r in self._reports if c is not ctx]
                    self._cond.notify_all()
            self._count("lost")
            ctx._cancel("lease-lost")
            self.log.warning("job %s: lease lost (heartbeat %d: %s)", ctx.id, status, _detail(payload))
        else:
            self.log.error("heartbeat of job %s answered %d: %s", ctx.id, status, _detail(payload))

    # ------------------------------------------------------------------ reports

    def _queue_report(self, ctx: JobContext, report: Dict[str, Any]) -> None:
        """Queue a report; the caller holds self._cond."""
        ctx.done = True
        item = {"id": ctx.id, "leaseToken": ctx.lease_token, **report}
        self._reports.append((ctx, item))
        self._cond.notify_all()

    def _queue_release(self, ctx: JobContext) -> None:
        """Queue a give-back of the job's lease; the caller holds self._cond."""
        ctx.done = True
        self._releases.append(ctx)
        self._count("given_back")
        self._cond.notify_all()

    def _release(self, ctx: JobContext) -> None:
        """POST /jobs/{id}/release: the job is queued again at once and the attempt not counted.
        Retried through 503s and connection errors a few times; after that its lease expires on
        its own and the job runs again then."""
        backoff = _Backoff(self.max_backoff)
        for attempt in range(5):
            try:
                status, payload = self._request(
                    f"/jobs/{urllib.parse.quote(ctx.id, safe='')}/release", {"leaseToken": ctx.lease_token, **ctx.release_fields}
                )
            except _Transient as e:
                if attempt == 4 or self._stopped.wait(backoff.next()):
                    self.log.warning("job %s: could not give its lease back (%s); it runs again when the lease expires", ctx.id, e)
                    return
                continue
            if status != 200:
                self.log.info("job %s: give-back answered %d (%s): its lease was gone already", ctx.id, status, _detail(payload))
            return

    def _report_loop(self) -> None:
        backoff = _Backoff(self.max_backoff)
        while True:
            with self._cond:
                while not self._reports and not self._releases and not self._stopped.is_set():
                    self._cond.wait(0.5)
                releases, self._releases = self._releases, []
                self._reports_in_flight += len(releases)
                if not self._reports and not releases:
                    return
            for ctx in releases:
                self._release(ctx)
            if releases:
                with self._cond:
                    self._reports_in_flight -= len(releases)
                    for ctx in releases:
                        self._active.pop(ctx.id, None)
                    self._cond.notify_all()
                continue
            if self.report_linger > 0 and not self._stopping.is_set():
                # gather the reports of the handlers still running, but no longer than that: when
                # none is left running nothing else can join, and the batch (which leases the next
                # jobs) goes at once
                linger_end = time.monotonic() + self.report_linger
                with self._cond:
                    while self._running > 0 and len(self._reports) < _MAX_REPORT_BATCH and not self._stopping.is_set():
                        left = linger_end - time.monotonic()
                        if left <= 0:
                            break
                        self._cond.wait(left)
            with self._cond:
                batch = self._reports[:_MAX_REPORT_BATCH]
                del self._reports[: len(batch)]
                self._reports_in_flight += len(batch)
                # the batch leases the next jobs into the slots free beside the long-poll
                reserve = 0
                if self._next_on_reports and not self._stopping.is_set():
                    reserve = max(0, min(100, self._free_slots() - self._polling))
                self._reserved += reserve
            try:
                try:
                    self._send_reports(batch, reserve)
                finally:
                    with self._cond:
                        self._reserved -= reserve
                        self._cond.notify_all()
                backoff.reset()
            except _Transient as e:
                delay = backoff.next()
                self.log.warning("reports failed (%s); retrying %d in %.1fs", e, len(batch), delay)
                with self._cond:
                    self._reports[:0] = batch
                    self._reports_in_flight -= len(batch)
                    self._cond.notify_all()
                if self._stopped.wait(delay):
                    return
                continue
            with self._cond:
                self._reports_in_flight -= len(batch)
                for ctx, _ in batch:
                    self._active.pop(ctx.id, None)
                self._cond.notify_all()

    def _send_reports(self, batch: List[Tuple[JobContext, Dict[str, Any]]], reserve: int = 0) -> None:
        """Send one batch. Refused whole (400, 413), it is split in halves until the bad report is
        alone; that one is sent once more as a failure saying why (so the job does not wait for its
        lease to expire), and dropped if even that is refused. A retry of an accepted report (after
        a connection error) is harmless: jobclock recognises a repeat by its lease token."""
        body: Dict[str, Any] = {"reports": [r for _, r in batch]}
        if reserve > 0:
            body["next"] = {"worker": self.worker_id, "types": sorted(self.handlers), "limit": reserve, "lease": format_duration(self.lease_seconds)}
            if self.groups:
                body["next"]["groups"] = self.groups
        status, payload = self._request("/jobs/reports", body)
        if status == 400 and any("final" in r for _, r in batch) and _refuses_final(payload):
            self.log.info("jobclock does not take final on reports (an older server): final failures are reported as failures")
            self._final_on_reports = False
            self._send_reports([(c, {k: v for k, v in r.items() if k != "final"}) for c, r in batch], reserve)
            return
        if status == 400 and reserve > 0 and _refuses_next(payload):
            self.log.info("jobclock does not take next on reports (an older server): leasing by long-poll only")
            with self._cond:
                self._next_on_reports = False
            self._send_reports(batch)
            return
        if status in (400, 413) and len(batch) > 1:
            half = len(batch) // 2
            self._send_reports(batch[:half])
            self._send_reports(batch[half:])
            return
        if status in (400, 413):
            ctx, report = batch[0]
            refusal = f"jobclock refused the report ({status}): {_detail(payload)}"
            if report.get("error", {}).get("kind") != "report-refused":
                self.log.error("job %s: %s; reporting it failed instead", ctx.id, refusal)
                failed = {"id": ctx.id, "leaseToken": ctx.lease_token, "outcome": "failed", "error": {"message": refusal[:2000], "kind": "report-refused"}}
                self._send_reports([(ctx, failed)])
                return
            self.log.error("job %s: %s; dropped (the job runs again when its lease expires)", ctx.id, refusal)
            return
        if status != 200:
            self.log.error("reports answered %d: %s; %d report(s) dropped (their jobs run again when their leases expire)", status, _detail(payload), len(batch))
            return
        for (ctx, report), res in zip(batch, payload.get("results", [])):
            code = res.get("status")
            if code == 200:
                if report.get("error", {}).get("kind") != "worker-stopped":
                    self._count("finished" if report["outcome"] == "finished" else "failed")
            elif code == 409:
                self._count("lost")
                self.log.warning("job %s: report not accepted, the lease was lost: %s", ctx.id, res.get("detail", ""))
            else:
                self.log.error("job %s: report answered %s: %s", ctx.id, code, res.get("detail", ""))
        jobs = payload.get("jobs") or []
        if jobs:
            # they take their slots while still reserved (the caller gives the reservation back
            # after): for that moment the free slots are counted short, never over
            for job in jobs:
                self._begin(job)

    def _count(self, key: str) -> None:
        with self._stats_lock:
            self.stats[key] += 1


class _Backoff:
    """Capped exponential backoff with full jitter: 0.1 s, 0.2 s, 0.4 s … up to ``cap``."""

    def __init__(self, cap: float) -> None:
        self.cap = cap
        self.attempt = 0

    def next(self) -> float:
        self.attempt += 1
        return random.uniform(0.5, 1.0) * min(self.cap, 0.1 * 2.0 ** min(self.attempt, 20))

    def reset(self) -> None:
        self.attempt = 0


def _json_of(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return {"detail": raw[:200].decode("utf-8", "replace")}


def _refuses_final(payload: Any) -> bool:
    """A 400 that names a report's ``final`` (its path, or ``"final"`` as the unrecognised key)."""
    errors = payload.get("errors") if isinstance(payload, dict) else None
    return isinstance(errors, list) and any(
        isinstance(e, dict) and (str(e.get("path", "")).endswith("/final") or '"final"' in str(e.get("message", ""))) for e in errors
    )


def _refuses_next(payload: Any) -> bool:
    """A 400 that names ``next``: the server does not know it."""
    errors = payload.get("errors") if isinstance(payload, dict) else None
    return isinstance(errors, list) and any(isinstance(e, dict) and str(e.get("path", "")).startswith("/next") for e in errors)


def _detail(payload: Any) -> str:
    if isinstance(payload, dict):
        problem = cast(Dict[str, Any], payload)
        return str(problem.get("detail") or problem.get("title") or problem)
    return str(payload)
