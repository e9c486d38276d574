import { withTransaction } from '../db/executor.js';
import { CHANNELS } from '../db/notifications.js';
import { ScheduleCache, STALE_MARK_MS } from '../domain/periodic-task.js';
import { planDueRun } from '../domain/run-plan.js';
import { Loop } from './loop.js';
import { isSlotConflict, taskAdvanceAndSubmit, taskClearStaleMarks, taskEarliestNextRun, taskTakeDue, taskUnmark, } from '../repositories/periodic-tasks.js';
import { overdueAtOf } from '../domain/task-health.js';
/** Wait before looking again when due tasks exist but another instance holds them right now. */
const CONTENDED_RETRY_MS = 25;
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How often a tick clears the marks of dead instances (housekeeping: a take passes over them anyway). */
const CLEAR_MARKS_EVERY_MS = 1_000;
/** Longest wait before a failed tick is tried again. */
const FAILURE_RETRY_MAX_MS = 1_000;
const emptySummary = (now) => ({
    now,
    clearedMarks: 0,
    batches: 0,
    taken: 0,
    submitted: 0,
    skipped: 0,
    cancelled: 0,
    duplicates: 0,
    coalesced: 0,
});
/**
 * Submits each due run of every periodic task exactly once, however many instances run (after
 * docspell's PeriodicScheduler). A tick clears stale marks (at most once a second), then works batch
 * by batch (up to two batches in flight at once by default, on two connections, the second from the
 * moment a take comes back full; see runTick), each batch one transaction of two statements:
 *  1. take the earliest enabled due tasks that carry no live mark: SELECT … FOR UPDATE SKIP LOCKED
 *     (taskTakeDue). The row lock is the batch's mark: no other instance takes or waits for these
 *     tasks, and if this instance dies the lock goes with its connection — nothing to clean up;
 *  2. in one statement (taskAdvanceAndSubmit): advance every task's nextrun to the first scheduled
 *     time after `now` (missed runs coalesce into one submission) and clear any stale mark; cancel
 *     the open jobs of `replace` tasks; insert the jobs of every task not skipped by `forbid`.
 *     The unique key on (task, slot) makes a repeated submission impossible.
 * Next times, timeboxes and drop-check intervals are computed in JS between the two, in bulk.
 * The loop then sleeps until the earliest nextrun (at most 30 s), woken early by NOTIFY when
 * tasks are created or changed.
 */
export class PeriodicScheduler {
    ctx;
    schedules = new ScheduleCache();
    batchSize;
    maxSleepMs;
    concurrency;
    loop;
    chain = Promise.resolve();
    /** A tick is owed: at the start, after the sleep to the earliest nextRun, after a failure, or while tasks are due. */
    mustTick = true;
    /** Set while stopping: lanes take no further batch. */
    stopping = false;
    unsubscribe = null;
    /** The `now` of the tick that last cleared stale marks. */
    marksClearedAt = null;
    constructor(ctx, options = {}) {
        this.ctx = ctx;
        this.batchSize = options.batchSize ?? 1000;
        this.maxSleepMs = Math.min(options.maxSleepMs ?? 30_000, MAX_TIMER_MS);
        this.concurrency = Math.max(1, Math.floor(options.concurrency ?? 2));
        this.loop = new Loop({
            name: 'periodic scheduler tick',
            logger: ctx.logger,
            clock: ctx.clock,
            step: (reason) => this.step(reason),
            // short and capped: the listener's reconnect also wakes the loop (a poke on the tasks
            // channel), and a long outage must not leave it asleep once the database is back
            failureBackoff: { initialMs: 250, maxMs: FAILURE_RETRY_MAX_MS },
        });
    }
    /** The loop's events (step, failed, sleep, stopped), for tests to await. */
    get events() {
        return this.loop.events;
    }
    start() {
        if (this.loop.isRunning)
            return;
        this.mustTick = true; // the first tick also clears marks left by dead instances
        this.unsubscribe = this.ctx.notifications.subscribe(CHANNELS.tasks, () => this.loop.wake());
        this.loop.start();
        this.ctx.logger.info({ instanceId: this.ctx.instanceId }, 'periodic scheduler started');
    }
    /**
     * Stops the loop, waits for a tick in flight and unmarks what this instance marked. (Batches
     * mark by row lock, which ends with their transaction; clearing committed marks of this
     * instance's name remains as the contract's last step.)
     */
    async stop() {
        if (!this.loop.isRunning)
            return;
        this.stopping = true;
        this.unsubscribe?.();
        this.unsubscribe = null;
        await this.loop.stop();
        this.stopping = false;
        await this.chain.catch(() => undefined);
        try {
            const unmarked = await taskUnmark(this.ctx.db, this.ctx.instanceId);
            if (unmarked > 0)
                this.ctx.logger.info({ unmarked }, 'periodic scheduler unmarked its tasks');
        }
        catch (err) {
            this.ctx.logger.warn({ err: { message: err.message } }, 'could not unmark tasks; other instances take them once the marks are 10 s old');
        }
        this.ctx.logger.info({ instanceId: this.ctx.instanceId }, 'periodic scheduler stopped');
    }
    /** Submits everything due at `now`. Ticks of one instance never overlap. */
    tick(now) {
        const result = this.chain.then(() => this.runTick(now));
        this.chain = result.catch(() => undefined);
        return result;
    }
    /**
     * One step of the loop: tick when one is owed (a wake-up because a task changed only re-plans),
     * then sleep until the earliest nextRun (at most maxSleepMs). Due tasks held by another instance
     * right now are looked at again shortly; progress made means go again at once.
     */
    async step(reason) {
        if (reason !== 'wake')
            this.mustTick = true;
        try {
            let taken = -1;
            if (this.mustTick) {
                taken = (await this.tick(this.ctx.clock.now())).taken;
                this.mustTick = false;
            }
            if (this.stopping)
                return 0;
            const earliest = await taskEarliestNextRun(this.ctx.db, STALE_MARK_MS);
            const wait = earliest === null ? this.maxSleepMs : earliest.getTime() - this.ctx.clock.now().getTime();
            if (wait > 0)
                return Math.min(wait, this.maxSleepMs);
            this.mustTick = true;
            return taken !== 0 ? 0 : CONTENDED_RETRY_MS; // not ticked yet or progress made: at once; else held elsewhere
        }
        catch (err) {
            this.mustTick = true;
            throw err;
        }
    }
    async runTick(now) {
        const summary = emptySummary(now);
        const staleBefore = new Date(now.getTime() - STALE_MARK_MS);
        const db = this.ctx.db;
        // Housekeeping, not needed for correctness (a take passes over stale marks itself): at most
        // once a second, so that a tick's jobs commit one round trip sooner.
        const sinceCleared = this.marksClearedAt === null ? Number.POSITIVE_INFINITY : now.getTime() - this.marksClearedAt;
        if (sinceCleared >= CLEAR_MARKS_EVERY_MS || sinceCleared < 0) {
            summary.clearedMarks = await taskClearStaleMarks(db, staleBefore);
            this.marksClearedAt = now.getTime();
            if (summary.clearedMarks > 0)
                this.ctx.logger.info({ cleared: summary.clearedMarks }, 'cleared stale marks of periodic tasks');
        }
        // Batches run in `concurrency` lanes, each its own transaction on its own connection. SKIP
        // LOCKED keeps their tasks disjoint (exactly as between instances), and while one lane's
        // statement executes in PostgreSQL, another computes its next times in JS, waits for its
        // commit's WAL flush, or runs its own statement on the other core. A lane stops when a take
        // finds fewer than batchSize tasks (nothing more is due and unheld right now); the first
        // failure stops the others and fails the tick.
        let failed = false;
        const lanes = [];
        // One lane to begin with; the others join once a take comes back full (more may be due), so a
        // tick that finds a few tasks due, as most do, is one transaction rather than one per lane.
        const widen = () => {
            while (lanes.length < this.concurrency && !failed)
                addLane();
        };
        const lane = async () => {
            while (!failed && !this.stopping) {
                let batch;
                try {
                    batch = await withTransaction(db, (trx) => this.runBatch(trx, now, staleBefore, false, widen));
                }
                catch (err) {
                    if (!isSlotConflict(err))
                        throw err;
                    // A slot of this batch already has a job: redo the batch, passing over such slots.
                    batch = await withTransaction(db, (trx) => this.runBatch(trx, now, staleBefore, true, widen));
                }
                if (batch.taken > 0)
                    summary.batches++;
                summary.taken += batch.taken;
                summary.submitted += batch.inserted.length;
                summary.skipped += batch.skipped.length;
                summary.cancelled += batch.cancelled.length;
                summary.duplicates += batch.duplicates.length;
                summary.coalesced += batch.coalesced;
                this.logBatch(batch);
                const metrics = this.ctx.metrics;
                if (metrics) {
                    const committed = this.ctx.clock.now().getTime();
                    for (const s of batch.inserted)
                        metrics.periodicSubmitted(committed - s.scheduledAt.getTime());
                    metrics.periodicSlots('skipped', batch.recorded.skipped);
                    metrics.periodicSlots('missed', batch.recorded.missed);
                    metrics.periodicSlots('dropped', batch.dropped.length);
                    metrics.periodicSlots('cancelled', batch.cancelled.length);
                }
                if (batch.taken < this.batchSize)
                    break;
            }
        };
        // A lane's failure is caught as the lane starts, not when the tick gets round to awaiting it: a
        // lane added while the tick awaits another could fail first, unobserved (an unhandled rejection).
        const errors = [];
        function addLane() {
            lanes.push(lane().catch((err) => {
                failed = true;
                errors.push(err);
            }));
        }
        addLane();
        for (let i = 0; i < lanes.length; i++)
            await lanes[i]; // lanes may be added meanwhile
        if (errors.length > 0)
            throw errors[0];
        if (summary.batches === 0)
            summary.batches = 1; // the look that found nothing
        if (summary.taken > 0) {
            this.ctx.logger.debug({ ...summary, now: now.toISOString() }, 'periodic scheduler tick');
        }
        return summary;
    }
    async runBatch(trx, now, staleBefore, skipExisting, onFull) {
        const due = await taskTakeDue(trx, { now, staleBefore, limit: this.batchSize });
        if (due.length === this.batchSize)
            onFull(); // more may be due: the other lanes take them meanwhile
        const advance = [];
        const dropRetries = [];
        const records = [];
        const recorded = { skipped: 0, missed: 0 };
        const submit = [];
        const replace = [];
        const skipped = [];
        const broken = [];
        const missed = [];
        let coalesced = 0;
        for (const t of due) {
            let timing;
            try {
                timing = {
                    schedule: this.schedules.get(t.timer, t.timezone),
                    createdAt: t.created,
                    firstRunAt: t.first_run_at,
                    tolerance: t.tolerance,
                    timebox: t.timebox,
                };
            }
            catch (err) {
                // A stored schedule this build cannot read: stop scheduling it rather than retry forever.
                advance.push({ taskId: t.id, nextRun: null });
                broken.push({ taskId: t.id, message: err.message });
                continue;
            }
            const openJobId = t.open_job_id === null ? null : String(t.open_job_id);
            const plan = planDueRun({
                timing,
                concurrencyPolicy: t.concurrency_policy,
                misfirePolicy: t.misfire_policy,
                catchUpLimit: t.catch_up_limit,
                catchUpWindow: t.catch_up_window,
                endAt: t.end_at,
                slot: t.nextrun,
                openJobId,
            }, now);
            // the dead man's switch: set again once a run finished (the outcome trigger clears it when
            // it cannot tell the next slot); a task still waiting for a success keeps its moment
            const overdueAt = t.alert_after !== null && t.overdue_at === null
                ? overdueAtOf({ ...timing, alertAfter: t.alert_after, endAt: t.end_at, lastSuccessAt: t.last_success_at })
                : null;
            advance.push({ taskId: t.id, nextRun: plan.nextRun, overdueAt });
            // a slot came due: retries of earlier runs end here (API.md: a retry never outlives its slot)
            if (plan.due > 0)
                dropRetries.push(...t.retry_ids.map(String));
            for (const g of plan.gaps) {
                recorded[g.outcome] += g.slots;
                records.push({
                    taskId: t.id,
                    outcome: g.outcome,
                    from: g.from,
                    to: g.to,
                    slots: g.slots,
                    blockedBy: g.blockedBy,
                    schedule: g.slots > 1 ? { timer: t.timer, timezone: t.timezone, anchor: t.created, firstRunAt: t.first_run_at } : null,
                });
            }
            if (plan.coalesced)
                coalesced++;
            if (plan.skipped?.reason === 'forbid-open-job') {
                skipped.push({ taskId: t.id, openJobId: plan.skipped.openJobId, scheduledAt: t.nextrun });
            }
            else if (plan.skipped?.reason === 'missed') {
                missed.push({ taskId: t.id, slots: plan.skipped.slots, policy: t.misfire_policy });
            }
            if (plan.submissions.length === 0)
                continue;
            if (plan.replaceOpen)
                replace.push(t.id);
            for (const sub of plan.submissions)
                submit.push({ taskId: t.id, ...sub });
        }
        const written = await taskAdvanceAndSubmit(trx, { advance, submit, replace, skipExisting, dropRetries, records }, now);
        let duplicates = [];
        if (written.inserted.length < submit.length) {
            const got = new Set(written.inserted.map((i) => i.periodicTaskId));
            duplicates = submit.filter((x) => !got.has(x.taskId));
        }
        return {
            taken: due.length,
            inserted: written.inserted,
            skipped,
            cancelled: written.cancelled,
            dropped: written.dropped,
            recorded,
            duplicates,
            broken,
            missed,
            coalesced,
        };
    }
    logBatch(b) {
        const log = this.ctx.logger;
        for (const s of b.inserted) {
            log.debug({ taskId: s.periodicTaskId, jobId: s.id, scheduledAt: s.scheduledAt }, 'submitted job of periodic task');
        }
        for (const s of b.skipped) {
            log.info({ taskId: s.taskId, jobId: s.openJobId, scheduledAt: s.scheduledAt }, 'skipped run of periodic task: a job of it is still open (policy forbid)');
        }
        for (const c of b.cancelled) {
            log.info({ taskId: c.periodicTaskId, jobId: c.id }, 'cancelled open job of periodic task (policy replace)');
        }
        for (const d of b.dropped) {
            log.info({ taskId: d.periodicTaskId, jobId: d.id }, 'dropped queued retry of periodic task: its next run came due');
        }
        for (const d of b.duplicates) {
            log.warn({ taskId: d.taskId, scheduledAt: d.scheduledAt }, 'slot of periodic task already had a job; not submitted again');
        }
        for (const m of b.missed) {
            log.info({ taskId: m.taskId, slots: m.slots, misfirePolicy: m.policy }, 'missed runs of periodic task not submitted (misfirePolicy)');
        }
        for (const x of b.broken) {
            log.error({ taskId: x.taskId, err: { message: x.message } }, 'periodic task has a schedule that cannot be read; it will not run until its schedule is changed');
        }
    }
}
//# sourceMappingURL=periodic-scheduler.js.map