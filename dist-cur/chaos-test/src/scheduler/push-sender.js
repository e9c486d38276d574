/**
 * Push types, the delivery engine's second half: jobs of a type with push settings (migration 0025)
 * are leased by this instance under the worker name `push:<instance>` through the worker protocol's
 * own lease — the lease combiner, the same claim statement and the same long-poll wake-ups as a
 * pulling worker's POST /jobs/next — so pause, concurrency, rate, fairness and priority apply to
 * them exactly as to any worker. Each leased job is POSTed, signed, to the type's URL; the answer
 * is reported through the worker protocol (domain/push.ts says what each answer means).
 */
import { EventEmitter } from 'node:events';
import { CHANNELS } from '../db/notifications.js';
import { LeaseLostError, NotFoundError } from '../domain/errors.js';
import { PUSH_IN_FLIGHT_DEFAULT, PUSH_LEASE_MARGIN_MS, pushOutcome } from '../domain/push.js';
import { pushTypesOf } from '../repositories/push-types.js';
import { postSigned } from './outgoing.js';
export class PushSender {
    ctx;
    box;
    http;
    options;
    events = new EventEmitter();
    loops = new Map();
    requests = new Set();
    worker;
    cap;
    unsubscribe = null;
    refreshTimer = null;
    refreshing = null;
    refreshAgain = false;
    stopped = true;
    constructor(ctx, box, http, options) {
        this.ctx = ctx;
        this.box = box;
        this.http = http;
        this.options = options;
        this.worker = `push:${ctx.instanceId}`;
        this.cap = options.maxInFlightPerType ?? PUSH_IN_FLIGHT_DEFAULT;
    }
    /** Push requests in flight on this instance. */
    get active() {
        return this.requests.size;
    }
    start() {
        if (!this.stopped)
            return;
        this.stopped = false;
        this.unsubscribe = this.ctx.notifications.subscribe(CHANNELS.pushTypes, () => void this.refresh());
        this.refreshTimer = setInterval(() => void this.refresh(), this.options.refreshMs ?? 30_000);
        this.refreshTimer.unref();
        void this.refresh();
    }
    /** Stops leasing (jobs a lease just took are given back) and waits for the requests in flight. */
    async stop() {
        this.stopped = true;
        this.unsubscribe?.();
        this.unsubscribe = null;
        if (this.refreshTimer)
            clearInterval(this.refreshTimer);
        this.refreshTimer = null;
        for (const t of this.loops.values())
            this.end(t);
        await Promise.allSettled([...this.loops.values()].map((t) => t.done));
        this.loops.clear();
        await this.refreshing;
        await Promise.allSettled([...this.requests]);
    }
    /** Reads the push settings again: starts a loop per new push type, ends those switched off. */
    refresh() {
        if (this.refreshing) {
            this.refreshAgain = true;
            return this.refreshing;
        }
        this.refreshing = (async () => {
            do {
                this.refreshAgain = false;
                let configs;
                try {
                    configs = await pushTypesOf(this.ctx.db);
                }
                catch (err) {
                    this.ctx.logger.warn({ err: { message: err.message } }, 'could not read the push types');
                    return;
                }
                if (this.stopped)
                    return;
                for (const [type, t] of this.loops) {
                    const config = configs.get(type);
                    if (config)
                        t.config = config;
                    else {
                        this.end(t);
                        this.loops.delete(type);
                        this.ctx.logger.info({ type }, 'push switched off');
                    }
                }
                for (const [type, config] of configs) {
                    if (this.loops.has(type))
                        continue;
                    const t = { config, abort: new AbortController(), inFlight: 0, roomFreed: null, done: Promise.resolve() };
                    t.done = this.run(t);
                    this.loops.set(type, t);
                    this.ctx.logger.info({ type, url: config.url, worker: this.worker }, 'pushing jobs');
                }
            } while (this.refreshAgain && !this.stopped);
        })().finally(() => {
            this.refreshing = null;
        });
        return this.refreshing;
    }
    end(t) {
        t.abort.abort();
        t.roomFreed?.();
    }
    /** Leases the type's jobs while there is room, as a long-polling worker would, and pushes each. */
    async run(t) {
        const signal = t.abort.signal;
        while (!signal.aborted) {
            // leases are made for half the room at least: one per ended request would be a claim
            // statement per job
            if (t.inFlight > this.cap / 2) {
                await new Promise((resolve) => (t.roomFreed = resolve));
                t.roomFreed = null;
                continue;
            }
            let jobs;
            try {
                jobs = await this.options.workers.next({
                    worker: this.worker,
                    types: [t.config.type],
                    limit: Math.min(this.cap - t.inFlight, 100),
                    waitMs: this.options.waitMs ?? 30_000,
                    leaseMs: t.config.timeoutMs + PUSH_LEASE_MARGIN_MS,
                }, signal);
            }
            catch (err) {
                this.ctx.logger.warn({ err: { message: err.message }, type: t.config.type }, 'could not lease jobs to push');
                await pause(1_000, signal);
                continue;
            }
            // an empty answer came after a long wait, or at once when leasing is over (shutdown)
            if (jobs.length === 0)
                await pause(100, signal);
            for (const job of jobs) {
                t.inFlight++;
                const p = this.push(t.config, job).finally(() => {
                    t.inFlight--;
                    this.requests.delete(p);
                    t.roomFreed?.();
                });
                this.requests.add(p);
            }
        }
    }
    /** POSTs one leased job and reports what its answer means. */
    async push(config, job) {
        const log = { jobId: job.id, type: job.type, url: config.url, attempt: job.attempts };
        let secret;
        try {
            secret = this.box.open(config.secret);
        }
        catch (err) {
            await this.act(job, { kind: 'failed', final: false, error: { message: err.message, statusCode: null } }, null);
            return;
        }
        const body = JSON.stringify({ job: this.options.renderLeased(job), leaseToken: job.leaseToken });
        const now = this.ctx.clock.now();
        const post = { url: config.url, event: 'job.push', deliveryId: job.leaseToken, secret, body, at: now, userAgent: 'jobclock-push' };
        const options = this.http(config.timeoutMs);
        const answer = await postSigned(post, options);
        if (options.signal.aborted) {
            // cut short by a graceful stop: the job is queued again at once, its attempt not counted
            await this.act(job, { kind: 'release', retryInMs: 0 }, answer.statusCode);
            return;
        }
        const outcome = pushOutcome(answer, this.ctx.clock.now());
        if (answer.truncated && outcome.kind === 'finished')
            this.ctx.logger.warn(log, 'push answer longer than the cap: finished without a result');
        this.ctx.logger.debug({ ...log, statusCode: answer.statusCode, outcome: outcome.kind, error: answer.error }, 'job pushed');
        await this.act(job, outcome, answer.statusCode);
    }
    /** Reports an outcome through the worker protocol; a lease the endpoint already reported on is no error. */
    async act(job, outcome, statusCode) {
        const w = this.options.workers;
        const lease = { id: job.id, leaseToken: job.leaseToken };
        let acted = outcome.kind;
        try {
            if (outcome.kind === 'finished')
                await w.report({ ...lease, outcome: 'finished', result: outcome.result });
            else if (outcome.kind === 'failed')
                await w.report({ ...lease, outcome: 'failed', error: outcome.error, final: outcome.final, retryInMs: outcome.retryInMs });
            else if (outcome.kind === 'release')
                await w.release(job.id, { leaseToken: job.leaseToken, retryInMs: outcome.retryInMs });
        }
        catch (err) {
            acted = null;
            const known = err instanceof LeaseLostError || err instanceof NotFoundError;
            const fields = { jobId: job.id, type: job.type, outcome: outcome.kind, err: { message: err.message } };
            if (known)
                this.ctx.logger.info(fields, 'push answer not applied: the lease is no longer current');
            else
                this.ctx.logger.warn(fields, 'could not report a pushed job; its lease will expire');
        }
        this.events.emit('pushed', { jobId: job.id, type: job.type, statusCode, outcome: acted });
    }
}
function pause(ms, signal) {
    return new Promise((resolve) => {
        if (signal.aborted)
            return resolve();
        const timer = setTimeout(done, ms);
        function done() {
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            resolve();
        }
        signal.addEventListener('abort', done, { once: true });
    });
}
//# sourceMappingURL=push-sender.js.map