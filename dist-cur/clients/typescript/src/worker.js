/**
 * The Worker runner: the README's worker loop, with its edge cases done once.
 *
 *   const worker = new Worker({ url, token, concurrency: 8, handlers: {
 *     'mail.fetch': async (job, ctx) => { …; await ctx.progress({ done: 3 }); return { fetched: 3 } },
 *   } });
 *   await worker.start();   // … later: await worker.stop();
 *
 * - Leases with a long-poll (`wait`) only the types it has handlers for, up to its free slots
 *   (at most 100 a request), and again as soon as slots free up.
 * - Heartbeats every running job at a third of its lease; `ctx.signal` is aborted when a heartbeat
 *   answers `cancel` (the job was cancelled or its deadline passed), when the deadline passes, when
 *   the lease is lost, or when stop() runs out of patience.
 * - A handler's return value is the job's result; a thrown error reports the job failed (with
 *   `retryIn` when the error carries one; for good, whatever attempts remain, when it is a
 *   FinalFailure). A thrown Snooze gives the job back to run again after its `retryIn`, the attempt
 *   not counted. Reports go in batches through POST /jobs/reports.
 * - `ctx.saveState(s)` saves state at once (a heartbeat): for a job of a periodic task it is handed
 *   to the task's next run as `job.taskState` (so is the `state` field of a returned object, the
 *   rest of it being the result); for a one-shot job it is the job's checkpoint, handed to its next
 *   attempt as `ctx.checkpoint`.
 * - stop() stops leasing: a lease in flight gets a moment to answer (one that finds jobs answers
 *   within milliseconds, and its jobs are run); a long-poll still waiting after that is abandoned
 *   (the server gives back what it claims for a request that went away). It then waits for running handlers up to `stopTimeoutMs`, then aborts the rest and
 *   gives their leases back (POST /jobs/{id}/release: queued again at once, the attempt not
 *   counted), and sends the reports still queued.
 * - 503s and connection errors are retried with a capped exponential back-off: a server restart
 *   does not stop the worker. Reports are retried too (repeating a report is harmless).
 * - Load-aware leasing: above `maxEventLoopUtilization` or `maxLoadAverage` it asks for no jobs.
 */
import { EventEmitter } from 'node:events';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
/** Thrown by a handler: the job is reported failed and retried after `retryIn` (if attempts remain). */
export class RetryLater extends Error {
    retryIn;
    constructor(message, 
    /** A duration ("30s", "5m", "1h30m") or milliseconds. */
    retryIn) {
        super(message);
        this.retryIn = retryIn;
        this.name = 'RetryLater';
    }
}
/** Thrown by a handler: the job is reported failed for good (`final: true`), whatever attempts remain. */
export class FinalFailure extends Error {
    constructor(message) {
        super(message);
        this.name = 'FinalFailure';
    }
}
/**
 * Thrown by a handler: "not now". The lease is given back and the job runs again after `retryIn`,
 * the attempt not counted (POST /jobs/{id}/release with retryIn); state saved with saveState goes
 * with it.
 */
export class Snooze extends Error {
    retryIn;
    constructor(
    /** A duration ("30s", "5m", "1h30m") or milliseconds. */
    retryIn, message = 'snoozed') {
        super(message);
        this.retryIn = retryIn;
        this.name = 'Snooze';
    }
}
const durationOf = (d) => (typeof d === 'string' ? d : `${Math.max(0, Math.round(d))}ms`);
/** Why `ctx.signal` was aborted: its `reason`. */
export class JobStopped extends Error {
    why;
    constructor(why, message) {
        super(message);
        this.why = why;
        this.name = 'JobStopped';
    }
}
const MAX_LIMIT = 100;
const MAX_REPORTS = 100;
/** How long stop() lets a lease in flight answer before it abandons it as a waiting long-poll. */
const STOP_LEASE_GRACE_MS = 250;
const sleep = (ms, signal) => new Promise((resolve) => {
    if (signal?.aborted)
        return resolve();
    const t = setTimeout(done, ms);
    function done() {
        clearTimeout(t);
        signal?.removeEventListener('abort', done);
        resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
});
/** A 503 or a connection error: worth retrying. */
class Unavailable extends Error {
}
export class Worker extends EventEmitter {
    id;
    handlers;
    types;
    concurrency;
    leaseMs;
    beatEveryMs;
    beats = null;
    waitMs;
    stopTimeoutMs;
    reportDelayMs;
    maxBackoffMs;
    now;
    options;
    running = new Map();
    slotFreed = null;
    /** Slots promised to the jobs a report batch in flight asks for (`next`). */
    reserved = 0;
    /** The limit of the long-poll in flight. */
    polling = 0;
    /** false once a server refused `next` on reports (older than this client): leases go by long-poll only. */
    nextOnReports = true;
    /** The server refused `final` (older than it): reports go without it. */
    finalRefused = false;
    leaseLoop = null;
    leasing = null;
    stopping = false;
    reports = [];
    reportTimer = null;
    sending = new Set();
    leaseAnswered = false;
    origin;
    prefix;
    headers;
    http = null;
    elu = performance.eventLoopUtilization();
    eluAt = 0;
    eluValue = 0;
    constructor(options) {
        super();
        this.options = options;
        this.handlers = { ...options.handlers };
        this.types = Object.keys(this.handlers);
        if (this.types.length === 0)
            throw new TypeError('Worker: give at least one handler (handlers: { "<type>": async (job, ctx) => … })');
        this.concurrency = options.concurrency ?? 8;
        if (!Number.isInteger(this.concurrency) || this.concurrency < 1) {
            throw new TypeError(`Worker: concurrency must be a whole number ≥ 1, got ${options.concurrency}`);
        }
        this.leaseMs = options.leaseMs ?? 30_000;
        if (!Number.isInteger(this.leaseMs) || this.leaseMs < 1_000 || this.leaseMs > 86_400_000) {
            throw new TypeError(`Worker: leaseMs must be from 1000 (1 s) to 86400000 (24 h), got ${options.leaseMs}`);
        }
        this.beatEveryMs = Math.floor(this.leaseMs / 3);
        this.waitMs = Math.min(options.waitMs ?? 30_000, 60_000);
        this.stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
        this.reportDelayMs = options.reportDelayMs ?? 5;
        this.maxBackoffMs = options.maxBackoffMs ?? 5_000;
        this.now = options.now ?? Date.now;
        this.id = options.workerId ?? `${os.hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
        const url = new URL(options.url);
        this.origin = url.origin;
        this.prefix = url.pathname.replace(/\/+$/, '');
        this.headers = { 'content-type': 'application/json', ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) };
    }
    /** Jobs running now. */
    get active() {
        return this.running.size;
    }
    /** Starts leasing; resolves at once (the loop runs until stop()). */
    async start() {
        if (this.leaseLoop)
            return;
        this.stopping = false;
        // undici's Pool rather than fetch: a third of the CPU per request, which a worker running
        // thousands of short jobs a second shares with its handlers.
        this.http ??= new Pool(this.origin, { connections: this.options.connections ?? 8, keepAliveTimeout: 30_000 });
        this.leaseLoop = this.loop();
    }
    /**
     * Stops leasing, waits up to `timeoutMs` (default: the stopTimeoutMs option) for running
     * handlers, aborts and gives back the rest, and sends every queued report.
     */
    async stop(timeoutMs = this.stopTimeoutMs) {
        this.stopping = true;
        this.slotFreed?.();
        if (this.leasing && this.leaseLoop) {
            // Cutting off a lease whose answer is already on its way would strand its jobs until their
            // leases expire: only a long-poll that is still waiting after a moment is abandoned.
            const returned = await Promise.race([this.leaseLoop.then(() => true), sleep(STOP_LEASE_GRACE_MS).then(() => false)]);
            if (!returned && !this.leaseAnswered)
                this.leasing?.abort();
        }
        await this.leaseLoop;
        this.leaseLoop = null;
        const ended = this.untilIdle();
        const timedOut = await Promise.race([ended.then(() => false), sleep(timeoutMs).then(() => true)]);
        if (timedOut) {
            // Handlers still running: they are told to stop, and their jobs go back to the queue now
            // (a handler that ignores its signal may still be running; its report would be refused).
            await Promise.all([...this.running.values()].map(async (r) => {
                abort(r, new JobStopped('worker-stopping', 'The worker is stopping; the job was given back.'));
                await this.giveBack(r);
            }));
        }
        await this.flushReports(true);
        const http = this.http;
        this.http = null;
        await http?.close();
    }
    /** Sends the reports queued now and waits for every report in flight to be answered. */
    async flush() {
        await this.flushReports(true);
    }
    untilIdle() {
        return new Promise((resolve) => {
            const check = () => (this.running.size === 0 ? resolve() : setTimeout(check, 10));
            check();
        });
    }
    // -------------------------------------------------------------------------------------------
    // leasing
    async loop() {
        let failures = 0;
        while (!this.stopping) {
            const free = this.concurrency - this.running.size - this.reserved;
            // Reports about to go out lease the next jobs themselves (their slots pass on in the same
            // transaction): the long-poll waits for their answer and takes what is left.
            if (free <= 0 || (this.reports.length > 0 && this.nextOnReports)) {
                await new Promise((resolve) => (this.slotFreed = resolve));
                this.slotFreed = null;
                continue;
            }
            if (this.overloaded()) {
                await sleep(100);
                continue;
            }
            this.leasing = new AbortController();
            try {
                const jobs = await this.lease(Math.min(free, MAX_LIMIT), this.leasing.signal);
                failures = 0;
                for (const job of jobs)
                    this.run(job);
            }
            catch (err) {
                if (this.stopping)
                    break;
                failures++;
                this.report(err);
                await sleep(this.backoff(failures));
            }
            finally {
                this.leasing = null;
            }
        }
    }
    /**
     * One long-poll. Once its answer has begun to arrive, stop() no longer aborts it, since the jobs
     * in it are leased already and are run (or given back).
     */
    async lease(limit, signal) {
        this.leaseAnswered = false;
        this.polling = limit;
        const body = { worker: this.id, types: this.types, limit, wait: `${this.waitMs}ms`, lease: `${this.leaseMs}ms` };
        let res;
        try {
            res = await this.call('POST', '/jobs/next', body, signal, () => (this.leaseAnswered = true));
        }
        catch (err) {
            if (signal.aborted)
                return [];
            throw err;
        }
        finally {
            this.polling = 0;
        }
        if (res.status === 204)
            return [];
        if (res.status === 200)
            return res.body.jobs;
        throw this.httpError('POST /jobs/next', res);
    }
    /**
     * One request; a connection error is `Unavailable`. `answered` runs when the answer's head
     * arrives, before its body is read.
     */
    async call(method, path, body, signal, answered) {
        const http = this.http;
        if (!http)
            throw new Unavailable(`${method} ${path}: the worker is stopped`);
        try {
            const res = await http.request({
                method,
                path: this.prefix + path,
                headers: this.headers,
                body: JSON.stringify(body),
                ...(signal ? { signal } : {}),
            });
            answered?.();
            const text = await res.body.text();
            let parsed = null;
            if (text.length > 0) {
                try {
                    parsed = JSON.parse(text);
                }
                catch {
                    parsed = text;
                }
            }
            return { status: res.statusCode, body: parsed };
        }
        catch (err) {
            throw new Unavailable(`${method} ${path}: ${err.message}`, { cause: err });
        }
    }
    overloaded() {
        const { maxEventLoopUtilization: maxElu, maxLoadAverage: maxLoad } = this.options;
        if (maxLoad !== undefined && os.loadavg()[0] / Math.max(1, os.availableParallelism()) > maxLoad)
            return true;
        if (maxElu !== undefined) {
            const t = performance.now();
            if (t - this.eluAt >= 1_000) {
                const next = performance.eventLoopUtilization();
                this.eluValue = performance.eventLoopUtilization(next, this.elu).utilization;
                this.elu = next;
                this.eluAt = t;
            }
            if (this.eluValue > maxElu)
                return true;
        }
        return false;
    }
    // -------------------------------------------------------------------------------------------
    // running a job
    run(job) {
        const r = {
            job,
            controller: null,
            beatAt: performance.now() + this.beatEveryMs,
            deadline: null,
            progress: undefined,
            state: null,
            settled: false,
        };
        this.running.set(job.id, r);
        // One timer beats for every running job (a timer per job cost more than a no-op job itself).
        if (!this.beats) {
            this.beats = setInterval(() => this.beatDue(), Math.min(1_000, Math.max(50, Math.floor(this.beatEveryMs / 4))));
            this.beats.unref(); // what keeps the process alive is the handler's own work
        }
        if (job.deadline) {
            const left = Date.parse(job.deadline) - this.now();
            r.deadline = setTimeout(() => abort(r, new JobStopped('deadline', `Job ${job.id} passed its deadline ${job.deadline}.`)), Math.max(0, left));
        }
        const ctx = {
            get signal() {
                return (r.controller ??= new AbortController()).signal;
            },
            taskState: job.taskState ?? null,
            checkpoint: job.checkpoint ?? null,
            progress: async (progress) => {
                r.progress = progress;
                await this.beat(r);
            },
            saveState: async (state) => {
                r.state = { value: state };
                await this.beat(r);
            },
            heartbeat: () => this.beat(r),
        };
        this.emit('job:start', job);
        const handler = this.handlers[job.type];
        void (async () => {
            try {
                if (!handler)
                    throw new Error(`no handler for job type "${job.type}"`);
                let result = await handler(job, ctx);
                if (job.periodicTaskId && result !== null && typeof result === 'object' && !Array.isArray(result) && 'state' in result) {
                    const { state, ...rest } = result;
                    r.state = { value: state };
                    result = rest;
                }
                this.end(r);
                if (r.settled)
                    return;
                this.enqueue({
                    id: job.id,
                    leaseToken: job.leaseToken,
                    outcome: 'finished',
                    ...(result === undefined ? {} : { result }),
                    ...(r.state ? { state: r.state.value } : {}),
                });
                this.emit('job:finish', job, result);
            }
            catch (err) {
                if (err instanceof Snooze) {
                    if (r.settled)
                        return this.end(r);
                    r.settled = true;
                    this.end(r);
                    await this.release(job, { retryIn: durationOf(err.retryIn), ...(r.state ? { state: r.state.value } : {}) });
                    return;
                }
                this.end(r);
                if (r.settled)
                    return;
                const retryIn = err?.retryIn;
                this.enqueue({
                    id: job.id,
                    leaseToken: job.leaseToken,
                    outcome: 'failed',
                    error: errorJson(err),
                    ...(typeof retryIn === 'string'
                        ? { retryIn }
                        : typeof retryIn === 'number'
                            ? { retryIn: `${Math.max(0, Math.round(retryIn))}ms` }
                            : {}),
                    ...(err instanceof FinalFailure ? { final: true } : {}),
                    ...(r.state ? { state: r.state.value } : {}),
                });
                this.emit('job:fail', job, err);
            }
        })();
    }
    /** The handler returned or threw: its timers stop and its slot is free. */
    end(r) {
        if (r.deadline)
            clearTimeout(r.deadline);
        r.deadline = null;
        if (this.running.get(r.job.id) === r)
            this.running.delete(r.job.id);
        this.slotFreed?.();
    }
    /** Heartbeats the running jobs whose beat is due. */
    beatDue() {
        if (this.running.size === 0) {
            if (this.beats)
                clearInterval(this.beats);
            this.beats = null;
            return;
        }
        const t = performance.now();
        for (const r of this.running.values())
            if (!r.settled && r.beatAt <= t)
                void this.beat(r).catch(() => undefined);
    }
    async beat(r) {
        if (r.settled)
            return;
        r.beatAt = performance.now() + this.beatEveryMs;
        const path = `/jobs/${encodeURIComponent(r.job.id)}/heartbeat`;
        let res;
        try {
            res = await this.call('POST', path, {
                leaseToken: r.job.leaseToken,
                ...(r.progress === undefined ? {} : { progress: r.progress }),
                ...(r.state ? { state: r.state.value } : {}),
            });
        }
        catch (err) {
            this.report(err);
            return; // the next beat tries again, well inside the lease
        }
        if (res.status === 200) {
            if (res.body.cancel && !r.controller?.signal.aborted) {
                abort(r, new JobStopped('cancelled', `Job ${r.job.id} was cancelled or passed its deadline: stop and report.`));
            }
            return;
        }
        if (res.status === 404 || res.status === 409) {
            this.lost(r, problemDetail(res.body) ?? `heartbeat answered ${res.status}`);
            return;
        }
        this.report(this.httpError(`POST ${path}`, res));
    }
    lost(r, detail) {
        if (r.settled)
            return;
        r.settled = true;
        abort(r, new JobStopped('lease-lost', `The lease of job ${r.job.id} was lost: ${detail}`));
        this.emit('job:lost', r.job, detail);
    }
    async giveBack(r) {
        if (r.settled)
            return;
        r.settled = true;
        this.end(r);
        await this.release(r.job);
    }
    /** Gives a leased job back: queued again at once (or after `retryIn`), the attempt not counted. */
    async release(job, extra = {}) {
        for (let attempt = 1;; attempt++) {
            try {
                const res = await this.call('POST', `/jobs/${encodeURIComponent(job.id)}/release`, { leaseToken: job.leaseToken, ...extra });
                if (res.status === 503 || res.status === 502 || res.status === 504)
                    throw this.httpError(`POST /jobs/${job.id}/release`, res);
                if (res.status === 200)
                    this.emit('job:released', job);
                else
                    this.emit('job:lost', job, problemDetail(res.body) ?? `release answered ${res.status}`);
                return;
            }
            catch (err) {
                if (attempt >= 5) {
                    this.report(err);
                    return; // the lease expires on its own and the job is queued again
                }
                await sleep(this.backoff(attempt));
            }
        }
    }
    // -------------------------------------------------------------------------------------------
    // reports
    enqueue(report) {
        this.reports.push(report);
        if (this.reports.length >= MAX_REPORTS)
            void this.flushReports(false);
        else
            this.reportTimer ??= setTimeout(() => void this.flushReports(false), this.reportDelayMs);
    }
    /** Sends the queued reports; with `all`, also waits for those in flight. */
    async flushReports(all) {
        if (this.reportTimer)
            clearTimeout(this.reportTimer);
        this.reportTimer = null;
        while (this.reports.length > 0) {
            const batch = this.reports.splice(0, MAX_REPORTS);
            // the batch leases the next jobs into the slots free now (those its own jobs held among
            // them), so under a binding concurrency limit the slots pass on without a gap
            const next = this.stopping || !this.nextOnReports ? 0 : Math.min(MAX_LIMIT, this.concurrency - this.running.size - this.reserved - this.polling);
            this.reserved += Math.max(0, next);
            const p = this.send(batch, Math.max(0, next)).finally(() => this.sending.delete(p));
            this.sending.add(p);
        }
        this.slotFreed?.(); // the lease loop sees the reservations
        if (all)
            await Promise.all([...this.sending]);
    }
    /** Sends one batch of reports, the first try asking for up to `next` jobs with it. */
    async send(batch, next) {
        if (this.finalRefused)
            batch = batch.map(withoutFinal);
        let reserved = next;
        const unreserve = () => {
            this.reserved -= reserved;
            reserved = 0;
            this.slotFreed?.();
        };
        try {
            for (let attempt = 1;; attempt++) {
                try {
                    // a retry leases nothing: jobs leased by a try whose answer was lost come back when
                    // their leases expire, and a second lease must not add to them
                    const body = reserved > 0
                        ? { reports: batch, next: { worker: this.id, types: this.types, limit: reserved, lease: `${this.leaseMs}ms` } }
                        : { reports: batch };
                    const res = await this.call('POST', '/jobs/reports', body);
                    if (res.status === 200) {
                        const answer = res.body;
                        for (const [i, result] of answer.results.entries()) {
                            if (result.status !== 200) {
                                const job = { id: batch[i].id };
                                this.emit('job:lost', job, result.detail ?? `report answered ${result.status}`);
                            }
                        }
                        const jobs = answer.jobs ?? [];
                        unreserve();
                        if (this.stopping)
                            await Promise.all(jobs.map((job) => this.release(job)));
                        else
                            for (const job of jobs)
                                this.run(job);
                        return;
                    }
                    if (res.status === 400 && reserved > 0 && refusesNext(res.body)) {
                        this.nextOnReports = false; // a server older than `next`: send the reports alone
                        unreserve();
                        continue;
                    }
                    if (res.status === 400 && batch.some((r) => r.final) && refusesFinal(res.body)) {
                        // a server older than `final`: the failures are reported as plain ones (retried
                        // while attempts remain) rather than the whole batch lost; said once
                        this.finalRefused = true;
                        this.report(new Error('the server does not take final: FinalFailure is reported as a failure, retried while attempts remain'));
                        batch = batch.map(withoutFinal);
                        unreserve();
                        continue;
                    }
                    throw this.httpError('POST /jobs/reports', res);
                }
                catch (err) {
                    unreserve();
                    const retriable = err instanceof Unavailable || !(err instanceof HttpError);
                    this.report(err);
                    if (!retriable || (this.stopping && attempt >= 8))
                        return;
                    await sleep(this.backoff(attempt));
                }
            }
        }
        finally {
            unreserve();
        }
    }
    // -------------------------------------------------------------------------------------------
    backoff(failures) {
        const ms = Math.min(this.maxBackoffMs, 100 * 2 ** Math.min(failures - 1, 10));
        return ms / 2 + Math.random() * (ms / 2);
    }
    httpError(what, res) {
        const detail = problemDetail(res.body) ?? (typeof res.body === 'string' ? res.body.slice(0, 200) : '');
        if (res.status === 503 || res.status === 502 || res.status === 504) {
            return new Unavailable(`${what}: ${res.status} ${detail}`);
        }
        return new HttpError(`${what}: ${res.status} ${detail}`, res.status);
    }
    report(err) {
        if (this.listenerCount('error') > 0)
            this.emit('error', err instanceof Error ? err : new Error(String(err)));
    }
}
/** An answer the worker cannot fix by retrying (401, 403, 400). */
export class HttpError extends Error {
    status;
    constructor(message, status) {
        super(message);
        this.status = status;
        this.name = 'HttpError';
    }
}
function abort(r, reason) {
    (r.controller ??= new AbortController()).abort(reason);
}
/** A 400 that names a report's `final`: the server does not know it. */
function refusesFinal(problem) {
    const errors = problem?.errors;
    return Array.isArray(errors) && errors.some((e) => typeof e.path === 'string' && /^\/reports\/\d+\/final$/.test(e.path));
}
const withoutFinal = (r) => {
    if (!r.final)
        return r;
    const { final: _final, ...rest } = r;
    return rest;
};
/** A 400 that names `next`: the server does not know it. */
function refusesNext(problem) {
    const errors = problem?.errors;
    return Array.isArray(errors) && errors.some((e) => typeof e.path === 'string' && e.path.startsWith('/next'));
}
function problemDetail(problem) {
    const p = problem;
    return typeof p?.detail === 'string' ? p.detail : typeof p?.title === 'string' ? p.title : undefined;
}
/** An error as JSON for the job's `error` field: message, name, and what made it stop. */
function errorJson(err) {
    if (err instanceof JobStopped)
        return { message: err.message, name: err.name, reason: err.why };
    if (err instanceof Error)
        return { message: err.message, name: err.name };
    if (err === undefined || err === null)
        return { message: 'the handler failed' };
    if (typeof err === 'object')
        return err;
    return { message: typeof err === 'string' ? err : JSON.stringify(err) };
}
//# sourceMappingURL=worker.js.map