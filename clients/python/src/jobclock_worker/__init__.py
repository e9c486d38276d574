"""A jobclock worker: long-poll, heartbeat, cancel, state, batched reports, clean stop.

    from jobclock_worker import Worker, RetryLater

    def send_mail(job, ctx):
        ...                                  # do the work; look at ctx.cancelled now and then
        return {"sent": True}                # the job's result

    Worker("http://127.0.0.1:3000", token=None, handlers={"mail.send": send_mail}).run()

See the package's README (clients/python/README.md) for what it does and its options.
"""

from ._worker import Duration, FinalFailure, Handler, Job, JobContext, Result, RetryLater, Snooze, Worker, format_duration, parse_duration

__all__ = ["Worker", "JobContext", "Result", "RetryLater", "FinalFailure", "Snooze", "Job", "Handler", "Duration", "parse_duration", "format_duration"]
__version__ = "0.2.0"
