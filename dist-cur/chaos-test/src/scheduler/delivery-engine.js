import { EventEmitter } from 'node:events';
import { Agent } from 'undici';
import { withTransaction } from '../db/executor.js';
import { CHANNELS } from '../db/notifications.js';
import { DELIVERY_BUSY_RATE_PER_SEC, deliveryJitter, deliveryRetryAt, WEBHOOK_TIMEOUT_MS } from '../domain/delivery.js';
import { TokenBucket } from '../domain/token-bucket.js';
import { jobFromRow } from '../repositories/job/row.js';
import { deliveryClaim, deliveryCommitLazily, deliveryNextDue, deliveryRecord, taskAnnounceOverdue, } from '../repositories/webhooks.js';
import { SecretBox } from '../services/webhook-secrets.js';
import { Loop, LoopService } from './loop.js';
import { postSigned, signatureHeader } from './outgoing.js';
import { PushSender } from './push-sender.js';
/** A claimed attempt may run this much longer than its timeout before another instance takes it over. */
const HOLD_MARGIN_MS = 5_000;
const TIMESTAMP_COLUMNS = [
    'run_at',
    'scheduled_at',
    'lease_expires_at',
    'started_at',
    'deadline',
    'finished_at',
    'created_at',
    'updated_at',
];
/**
 * Sends the outbox of webhook deliveries (migrations 0022, 0028). Instances claim due deliveries
 * with FOR UPDATE SKIP LOCKED, one attempt each, so no two send the same attempt, and turn recorded
 * events into deliveries when fewer are due than they have room for; a NOTIFY from the triggers
 * that record events wakes the loop, and its sleep ends when the next retry is due. Requests go
 * through undici with keep-alive connections, a timeout each and at most `maxInFlight` at once;
 * redirects are never followed (a 3xx is a failed attempt). A failed attempt is retried with
 * exponential backoff and jitter (domain/delivery.ts) for at least 24 h. The loop also announces
 * task.overdue for tasks whose overdue_at has passed, since no write causes that event. With `push`,
 * it also pushes the jobs of push types (push-sender.ts) through the same connections.
 */
export class DeliveryEngine extends LoopService {
    ctx;
    options;
    loop;
    events_ = new EventEmitter();
    box;
    maxInFlight;
    timeoutMs;
    idleMs;
    overdueEveryMs;
    maxResponseBytes;
    random;
    dispatcher;
    ownDispatcher;
    inFlight = new Set();
    /** Attempts that ended and are not recorded yet: the next step records them in one statement. */
    ended = [];
    stopping = new AbortController();
    nextOverdueLook = 0;
    budget;
    /** Until when the last step waits for the budget (0: it does not): notifications change nothing before. */
    budgetWaitUntil = 0;
    unsubscribe = null;
    /** The push types' half of the engine (push-sender.ts), sharing its connections and its stop. */
    push;
    constructor(ctx, options) {
        super();
        this.ctx = ctx;
        this.options = options;
        this.box = new SecretBox(ctx.secretKey);
        this.maxInFlight = options.maxInFlight ?? 64;
        this.timeoutMs = options.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
        this.idleMs = options.idleMs ?? 60_000;
        this.overdueEveryMs = options.overdueEveryMs ?? 5_000;
        this.maxResponseBytes = options.maxResponseBytes ?? 1024 * 1024;
        this.random = options.random ?? Math.random;
        const rate = options.busyRatePerSec ?? DELIVERY_BUSY_RATE_PER_SEC;
        this.budget = new TokenBucket(rate, Math.max(1, Math.round(rate / 10)));
        this.ownDispatcher = options.dispatcher ? null : new Agent({ keepAliveTimeout: 30_000, connections: 32 });
        this.dispatcher = options.dispatcher ?? this.ownDispatcher;
        this.push = options.push ? new PushSender(ctx, this.box, (ms) => this.http(ms, true), options.push) : null;
        this.loop = new Loop({
            name: 'delivery engine',
            logger: ctx.logger,
            clock: ctx.clock,
            step: () => this.step(),
            failureBackoff: { initialMs: 500, maxMs: 5_000 },
        });
    }
    start() {
        this.unsubscribe ??= this.ctx.notifications.subscribe(CHANNELS.deliveries, () => {
            // while the budget holds the engine back, a report's notification would only wake it to
            // find it still empty: the loop wakes by itself when the budget has room again
            if (this.ctx.clock.now().getTime() >= this.budgetWaitUntil || this.options.busy?.() !== true)
                this.loop.wake();
        });
        super.start();
        this.push?.start();
    }
    /**
     * Stops claiming, cuts the requests in flight short and closes the connections: a slow receiver
     * must not hold up a graceful shutdown. The attempts cut short are not recorded; they stay
     * claimed until their hold ends, and are then made again (by any instance).
     */
    async stop() {
        this.unsubscribe?.();
        this.unsubscribe = null;
        await super.stop();
        this.stopping.abort();
        await Promise.allSettled([...this.inFlight, this.push?.stop()]);
        await this.record(this.ctx.db); // unrecorded ones are attempted again after their hold
        if (this.ownDispatcher && !this.ownDispatcher.closed)
            await this.ownDispatcher.close();
    }
    /** `recorded` events, for tests and benchmarks to await. */
    get deliveries() {
        return this.events_;
    }
    /** Attempts being made on this instance now. */
    get active() {
        return this.inFlight.size;
    }
    /**
     * One pass at `now`, for tests and tools: announces overdue tasks, then claims what is due and
     * sends it, batch after batch, waiting for every answer.
     */
    async tick(now) {
        const result = { delivered: 0, retried: 0, failed: 0 };
        await taskAnnounceOverdue(this.ctx.db, now, 1_000);
        for (;;) {
            const claimed = await deliveryClaim(this.ctx.db, now, this.maxInFlight, this.timeoutMs + HOLD_MARGIN_MS);
            const attempts = await Promise.all(claimed.map((d) => this.send(d)));
            this.ended.push(...attempts);
            await this.record(this.ctx.db);
            for (const a of attempts) {
                if (a.status === 'delivered')
                    result.delivered++;
                else if (a.status === 'pending')
                    result.retried++;
                else
                    result.failed++;
            }
            if (claimed.length < this.maxInFlight) {
                // done unless more is due: events another instance was turning into deliveries meanwhile
                const next = await deliveryNextDue(this.ctx.db);
                if (next === null || next.getTime() > now.getTime())
                    return result;
                if (claimed.length === 0)
                    await new Promise((r) => setTimeout(r, 5));
            }
        }
    }
    async step() {
        const now = this.ctx.clock.now();
        this.budgetWaitUntil = 0;
        if (now.getTime() >= this.nextOverdueLook) {
            const announced = await taskAnnounceOverdue(this.ctx.db, now, 1_000);
            if (announced.length > 0)
                this.ctx.logger.info({ tasks: announced }, 'periodic tasks turned overdue');
            this.nextOverdueLook = now.getTime() + this.overdueEveryMs;
        }
        const free = this.maxInFlight - this.inFlight.size;
        // while workers are busy, attempts begin within the budget; otherwise as fast as room allows
        const budgeted = this.options.busy?.() === true;
        const nowMs = now.getTime();
        if (budgeted && free > 0) {
            // within the budget, claims (and the records they carry) wait for half a burst: not a
            // transaction for every report's notification that wakes the loop
            const batch = Math.min(free, Math.max(1, Math.floor(this.budget.burst / 2)));
            if (this.budget.available(nowMs) < batch) {
                const wait = Math.max(1, Math.min(this.budget.msUntil(batch, nowMs), this.nextOverdueLook - nowMs));
                this.budgetWaitUntil = nowMs + wait;
                return wait;
            }
        }
        const room = budgeted ? Math.max(0, Math.min(free, this.budget.available(nowMs))) : free;
        let claimed = 0;
        if (room > 0 || this.ended.length > 0) {
            // what ended is recorded and the next batch claimed in one transaction that does not wait
            // for its commit to reach the disk: losing it in a crash only sends those attempts again
            // (at least once holds), and the engine adds no WAL flushes to those the worker loop waits on
            const due = await withTransaction(this.ctx.db, async (tx) => {
                await deliveryCommitLazily(tx);
                await this.record(tx);
                return room > 0 ? deliveryClaim(tx, now, room, this.timeoutMs + HOLD_MARGIN_MS) : [];
            });
            claimed = due.length;
            if (budgeted)
                this.budget.take(claimed, nowMs);
            for (const d of due) {
                const p = this.send(d).then((a) => {
                    if (!this.stopping.signal.aborted)
                        this.ended.push(a);
                    this.inFlight.delete(p);
                    // once half the room is free, the next step records what ended and claims again: a
                    // statement of each per batch of attempts, not per attempt
                    if (this.inFlight.size <= this.maxInFlight / 2)
                        this.loop.wake();
                });
                this.inFlight.add(p);
            }
        }
        const budgetWait = budgeted ? this.budget.msUntil(1, nowMs) : 0;
        const untilOverdueLook = Math.max(1, this.nextOverdueLook - nowMs);
        // more than half full: the attempts that end wake the loop
        if (this.inFlight.size > this.maxInFlight / 2)
            return untilOverdueLook;
        // more may be due: at once, or when the budget has room again
        if ((claimed > 0 && claimed === room) || (room === 0 && budgetWait > 0)) {
            const wait = Math.min(budgetWait, untilOverdueLook);
            if (budgeted)
                this.budgetWaitUntil = nowMs + wait;
            return wait;
        }
        const next = await deliveryNextDue(this.ctx.db);
        const untilDue = next === null ? this.idleMs : Math.max(0, next.getTime() - nowMs);
        return Math.min(Math.max(untilDue, budgetWait), untilOverdueLook, this.idleMs);
    }
    /**
     * Records the attempts that ended since the last step, in one statement however many (the
     * attempts of a busy engine end by the hundred a second).
     */
    async record(db) {
        if (this.ended.length === 0)
            return;
        const batch = this.ended;
        this.ended = [];
        try {
            const recorded = await deliveryRecord(db, batch, this.ctx.clock.now());
            this.events_.emit('recorded', { attempts: batch, recorded });
        }
        catch (err) {
            // they stay claimed until their hold ends, then they are attempted again: at least once
            this.ctx.logger.warn({ err: { message: err.message }, attempts: batch.length }, 'could not record delivery attempts');
        }
    }
    /** Makes one attempt: what came of it, to be recorded. */
    async send(d) {
        const { statusCode, error } = await this.post(d);
        const now = this.ctx.clock.now();
        let attempt;
        if (error === null) {
            attempt = { id: d.id, attempts: d.attempts, status: 'delivered', nextAttemptAt: null, statusCode, error: null };
        }
        else {
            const next = deliveryRetryAt(d.attempts, d.createdAt, now, deliveryJitter(this.random));
            attempt = { id: d.id, attempts: d.attempts, status: next ? 'pending' : 'failed', nextAttemptAt: next, statusCode, error };
            const log = { deliveryId: d.id, event: d.event, url: d.url, attempts: d.attempts, statusCode, error, retryAt: next };
            if (next)
                this.ctx.logger.debug(log, 'webhook delivery failed; will retry');
            else
                this.ctx.logger.warn(log, 'webhook delivery failed for good: retried for 24 h');
        }
        return attempt;
    }
    /** POSTs the delivery: its status code, and null or what went wrong. */
    async post(d) {
        let secret;
        try {
            secret = this.box.open(d.secret);
        }
        catch (err) {
            return { statusCode: null, error: err.message };
        }
        const body = JSON.stringify(this.bodyOf(d));
        const post = { url: d.url, event: d.event, deliveryId: d.id, secret, body, at: this.ctx.clock.now(), userAgent: 'jobclock-webhooks' };
        const answer = await postSigned(post, this.http(this.timeoutMs, false));
        return { statusCode: answer.statusCode, error: answer.error };
    }
    /** How requests are made: the engine's pool, its stop signal and body cap. */
    http(timeoutMs, read2xx) {
        return { dispatcher: this.dispatcher, timeoutMs, signal: this.stopping.signal, maxResponseBytes: this.maxResponseBytes, read2xx };
    }
    /** `{ id, event, at, job | task }`. */
    bodyOf(d) {
        const head = { id: d.id, event: d.event, at: d.at.toISOString() };
        if (!d.event.startsWith('job.'))
            return { ...head, task: d.payload };
        // the job as it is now; retention may have deleted it while a receiver was down
        if (d.payload === null)
            return { ...head, job: { id: d.subject } };
        const row = { ...d.payload };
        for (const c of TIMESTAMP_COLUMNS)
            if (typeof row[c] === 'string')
                row[c] = new Date(row[c]);
        return { ...head, job: this.options.renderJob(jobFromRow(row)) };
    }
}
export { signatureHeader };
//# sourceMappingURL=delivery-engine.js.map