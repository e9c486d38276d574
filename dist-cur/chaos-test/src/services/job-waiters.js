/**
 * Long-polling workers of this instance, woken without polling the database:
 *
 * - The one LISTEN connection (db/notifications.ts) calls notify() for every job made runnable by any
 *   instance (the INSERT trigger; retry, requeue and PATCH send pg_notify themselves). A payload with
 *   a future epoch-ms time only moves the shared timer; an empty one (or a time now due) wakes.
 * - A wake-up does not let every waiter query at once (no thundering herd): waiters are grouped by
 *   filter, and per group the oldest waiter tries first; one that gets a full batch wakes the next
 *   two (there may be more), one that gets less stops the wave — unless another wake-up arrived
 *   meanwhile. A waiter that got nothing keeps its place at the front.
 * - Jobs with a future runAt: after a wave misses, one query asks for the earliest queued run_at and
 *   one shared timer wakes the waiters then. No wake-up since that answer: no query again.
 * - Idle waiting costs the database nothing: no query per waiter, no periodic query at all.
 */
export class JobWaiters {
    options;
    groups = new Map();
    seq = 0;
    stopped = false;
    timer = null;
    timerAt = Number.POSITIVE_INFINITY;
    /** The earliest future run_at must be asked again (something changed since the last answer). */
    earliestStale = true;
    refreshing = null;
    refreshAgain = false;
    maxActive;
    maxSleepMs;
    waiting = 0;
    /** Counters for tests and benchmarks. */
    stats = { wakeups: 0, attempts: 0, earliestQueries: 0 };
    constructor(options) {
        this.options = options;
        this.maxActive = options.maxActivePerGroup ?? 4;
        this.maxSleepMs = options.maxSleepMs ?? 60_000;
    }
    /** Advances on every wake-up; see WaitRequest.seenSequence. */
    sequence() {
        return this.seq;
    }
    /** Requests waiting right now. */
    get size() {
        return this.waiting;
    }
    /** A notification on the jobs channel (payload: '' or the epoch ms when a job becomes runnable). */
    notify(payload) {
        const at = payload === '' ? Number.NaN : Number(payload);
        if (Number.isFinite(at) && at > this.options.clock.now().getTime()) {
            this.wakeAt(at);
            return;
        }
        this.wake();
    }
    /** Something may be runnable now: start a wave in every group. */
    wake() {
        this.seq++;
        this.earliestStale = true;
        if (this.stopped || this.waiting === 0)
            return;
        this.stats.wakeups++;
        for (const group of this.groups.values())
            this.launch(group, 1);
    }
    /**
     * Waits for jobs: resolves with the jobs one of its attempts leased, or [] when `waitMs` passes,
     * the signal aborts or the waiters shut down.
     */
    wait(req) {
        if (this.stopped || req.waitMs <= 0 || req.signal?.aborted)
            return Promise.resolve([]);
        return new Promise((resolve, reject) => {
            const w = { req, resolve, reject, timer: null, over: false, active: false, done: false };
            w.timer = setTimeout(() => this.end(w), req.waitMs);
            if (req.signal) {
                w.onAbort = () => this.end(w);
                req.signal.addEventListener('abort', w.onAbort, { once: true });
            }
            let group = this.groups.get(req.key);
            if (!group) {
                group = { queue: [], active: 0 };
                this.groups.set(req.key, group);
            }
            group.queue.push(w);
            this.waiting++;
            if (this.seq !== req.seenSequence) {
                this.launch(group, 1); // woken while its own attempt ran: try again
            }
            else {
                this.refreshEarliest(); // only queries when something changed since the last answer
            }
        });
    }
    /** Answers every waiting request with no jobs (204) and stops waking. In-flight attempts finish. */
    shutdown() {
        this.stopped = true;
        this.clearTimer();
        for (const group of this.groups.values()) {
            for (const w of [...group.queue])
                this.end(w);
        }
    }
    end(w) {
        if (w.done)
            return;
        if (w.active) {
            w.over = true; // answered when its attempt returns
            return;
        }
        this.settle(w, []);
    }
    settle(w, jobs) {
        if (w.done)
            return;
        w.done = true;
        this.waiting--;
        if (w.timer)
            clearTimeout(w.timer);
        if (w.onAbort)
            w.req.signal?.removeEventListener('abort', w.onAbort);
        const group = this.groups.get(w.req.key);
        if (group) {
            const i = group.queue.indexOf(w);
            if (i >= 0)
                group.queue.splice(i, 1);
            if (group.queue.length === 0 && group.active === 0)
                this.groups.delete(w.req.key);
        }
        if (this.waiting === 0 && this.timer !== null) {
            this.clearTimer();
            this.earliestStale = true; // the next waiter needs the timer again
        }
        if (jobs instanceof Error)
            w.reject(jobs);
        else
            w.resolve(jobs);
    }
    /** Starts up to `n` attempts in a group, oldest waiters first. */
    launch(group, n) {
        if (this.stopped)
            return;
        let started = 0;
        for (const w of group.queue) {
            if (started >= n || group.active >= this.maxActive)
                break;
            if (w.active || w.done || w.over)
                continue;
            started++;
            void this.attempt(group, w);
        }
    }
    async attempt(group, w) {
        const before = this.seq;
        w.active = true;
        group.active++;
        this.stats.attempts++;
        let jobs;
        try {
            jobs = await w.req.attempt();
        }
        catch (err) {
            w.active = false;
            group.active--;
            this.settle(w, err instanceof Error ? err : new Error(String(err)));
            return;
        }
        w.active = false;
        group.active--;
        if (jobs.length > 0) {
            this.settle(w, jobs);
            // A full batch: there may be more; widen the wave. Less than asked for: the queue was drained
            // as of this attempt, so go on only if something was made runnable meanwhile.
            if (jobs.length >= w.req.limit)
                this.launch(group, 2);
            else if (this.seq !== before)
                this.launch(group, 1);
            return;
        }
        if (w.over) {
            this.settle(w, []);
        }
        if (this.seq !== before) {
            this.launch(group, 1);
        }
        else if (group.active === 0) {
            this.refreshEarliest();
        }
    }
    // -------------------------------------------------------------------------------------------
    // The shared timer for jobs whose runAt is in the future
    refreshEarliest() {
        if (this.stopped || this.waiting === 0 || !this.earliestStale)
            return;
        if (this.refreshing) {
            this.refreshAgain = true;
            return;
        }
        this.earliestStale = false;
        const seqAtStart = this.seq;
        this.stats.earliestQueries++;
        this.refreshing = this.options
            .earliest(this.options.clock.now())
            .then((at) => {
            if (at)
                this.wakeAt(at.getTime());
            else if (this.seq === seqAtStart)
                this.clearTimer();
        })
            .catch((err) => {
            this.earliestStale = true;
            this.options.logger.warn({ err: { message: err.message } }, 'cannot read the next runAt; waiters rely on notifications');
        })
            .finally(() => {
            this.refreshing = null;
            if (this.refreshAgain) {
                this.refreshAgain = false;
                this.refreshEarliest();
            }
        });
    }
    wakeAt(at) {
        if (this.stopped)
            return;
        if (at >= this.timerAt && this.timer !== null)
            return;
        this.clearTimer();
        if (this.waiting === 0) {
            this.earliestStale = true; // nobody to wake; the next waiter asks again
            return;
        }
        const delay = Math.min(Math.max(at - this.options.clock.now().getTime() + 1, 0), this.maxSleepMs);
        this.timerAt = at;
        this.timer = setTimeout(() => {
            this.timer = null;
            this.timerAt = Number.POSITIVE_INFINITY;
            this.wake();
        }, delay);
        this.timer.unref();
    }
    clearTimer() {
        if (this.timer)
            clearTimeout(this.timer);
        this.timer = null;
        this.timerAt = Number.POSITIVE_INFINITY;
    }
}
//# sourceMappingURL=job-waiters.js.map