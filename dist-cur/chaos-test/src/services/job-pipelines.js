/**
 * The per-instance state where concurrent requests of the job routes meet: the group committers of
 * inserts and reports (one statement and one commit for many requests), the lease combiner (one
 * claim for many workers' asks) and the long-poll waiters (one wake-up fan-out for every waiting
 * worker, fed by the instance's one LISTEN connection). Each exists once per instance: the point of
 * each is that requests share it. createServices (index.ts) builds it once and hands it to the
 * services that use it.
 */
import { retryOnDeadlock } from '../db/database.js';
import { CHANNELS } from '../db/notifications.js';
import { jobDebounce, jobDebounceMany, jobEarliestFutureRunAt, jobInsert, jobInsertMany, jobLease, jobReport, } from '../repositories/jobs.js';
import { typeDefaultsOf } from '../repositories/type-defaults.js';
import { BatchCommitter } from './batch-committer.js';
import { JobEndWaiters } from './job-end-waiters.js';
import { JobWaiters } from './job-waiters.js';
import { LeaseCombiner } from './lease-combiner.js';
/**
 * How the statements of concurrent requests are shared (reports, single creations and their type
 * defaults lookups): up to 1,000 items a statement, a second statement beside the first only once
 * the first has run 2 ms (a commit waiting on the disk, a row lock held elsewhere). Under load a
 * statement takes well under that, so requests gather into half as many statements as with two
 * always in flight: 10–25 % less PostgreSQL CPU per job for one report or one POST /jobs per
 * request (bench/README.md, "Fewer, larger statements").
 */
const BATCHES = { maxBatch: 1000, maxInFlight: 2, overlapAfterMs: 2 };
/** Builds the instance's pipelines; call it once per instance (createServices does). */
export function createJobPipelines(ctx) {
    const waiters = new JobWaiters({
        clock: ctx.clock,
        logger: ctx.logger,
        earliest: (now) => jobEarliestFutureRunAt(ctx.db, now),
    });
    ctx.notifications.subscribe(CHANNELS.jobs, (payload) => waiters.notify(payload));
    const endWaiters = new JobEndWaiters();
    ctx.notifications.subscribe(CHANNELS.jobDone, (payload) => endWaiters.notify(payload));
    return {
        waiters,
        endWaiters,
        // Asks of 100 jobs or more are claimed on their own (see CombinerOptions.soloLimit).
        leaser: new LeaseCombiner((filter, slots) => claimJobs(ctx, filter, slots), {
            maxSlots: 500,
            maxInFlight: 2,
            maxRounds: 20,
            soloLimit: 100,
        }),
        completer: new BatchCommitter((inputs) => writeReports(ctx, inputs), { ...BATCHES }, ctx.logger),
        minimalCompleter: new BatchCommitter((inputs) => writeReports(ctx, inputs, false), { ...BATCHES }, ctx.logger),
        typeDefaults: new BatchCommitter(async (types) => {
            const found = await typeDefaultsOf(ctx.db, types);
            return types.map((t) => found.get(t));
        }, { ...BATCHES }, ctx.logger),
        inserter: new BatchCommitter((rows) => {
            const now = ctx.clock.now();
            return rows.length === 1 ? jobInsert(ctx.db, rows[0], now).then((j) => [j]) : jobInsertMany(ctx.db, rows, now);
        }, { ...BATCHES }, ctx.logger),
        // two statements upsert their keys in key order: they wait for each other, never in a cycle
        debouncer: new BatchCommitter((rows) => {
            const now = ctx.clock.now();
            return rows.length === 1 ? jobDebounce(ctx.db, rows[0], now).then((r) => [r]) : jobDebounceMany(ctx.db, rows, now);
        }, { ...BATCHES }, ctx.logger),
    };
}
/** One claim statement (for the LeaseCombiner), retried on a deadlock, logged. */
async function claimJobs(ctx, filter, slots) {
    // two claims (or a claim and the scheduler) may lock the same task rows in another order
    const r = await retryOnDeadlock(() => jobLease(ctx.db, { now: ctx.clock.now(), types: filter.types, groups: filter.groups, slots }));
    logLease(ctx, r);
    return r;
}
/**
 * Applies reports in one statement, then logs and counts them. Ending jobs that others depend on
 * updates those dependents (migration 0026's trigger): two batches ending dependencies of the same
 * jobs in another order may deadlock, and the statement, rolled back whole, runs again.
 */
export async function writeReports(ctx, inputs, withJobs = true) {
    const results = await retryOnDeadlock(() => jobReport(ctx.db, inputs, ctx.clock.now(), { jobs: withJobs }));
    reported(ctx, inputs, results);
    return results;
}
/** Logs a claim's leases and drops, and counts the drops of periodic tasks' slots. */
export function logLease(ctx, r) {
    const log = ctx.logger;
    for (const d of r.dropped) {
        const expired = d.error?.reason === 'expired';
        log.info({ jobId: d.id, taskId: d.taskId, error: d.error }, expired ? 'job dropped at lease: past its startBy' : 'job dropped at lease: it would begin too early');
        if (d.taskId !== null)
            ctx.metrics?.periodicSlots('dropped');
    }
    if (log.isLevelEnabled('debug')) {
        for (const j of r.leased) {
            log.debug({ jobId: j.id, taskId: j.periodicTaskId ?? undefined, worker: j.worker, attempt: j.attempts, leaseExpiresAt: j.leaseExpiresAt }, 'job leased');
        }
    }
}
/** Logs and counts reports once they are committed. */
export function reported(ctx, inputs, results) {
    logReports(ctx, inputs, results);
    const metrics = ctx.metrics;
    if (metrics) {
        for (const r of results) {
            if (r.verdict !== 'applied' || r.type === null)
                continue;
            const state = r.currentState;
            if (state === 'finished' || state === 'failed') {
                metrics.jobCompleted(r.type, state);
                if (r.taskId !== null)
                    metrics.periodicSlots(state);
            }
            else if (state === 'queued')
                metrics.jobCompleted(r.type, 'requeued');
        }
    }
}
function logReports(ctx, inputs, results) {
    const log = ctx.logger;
    const debug = log.isLevelEnabled('debug');
    results.forEach((res, i) => {
        const state = res.currentState;
        if (res.verdict === 'not-found' || res.verdict === 'lease-lost') {
            log.info({ jobId: res.id, outcome: inputs[i].outcome, verdict: res.verdict, state }, 'report refused');
        }
        else if (state === 'failed') {
            log.info({ jobId: res.id, taskId: res.taskId ?? undefined, attempts: res.attempts ?? undefined }, 'job failed');
        }
        else if (debug) {
            const msg = state === 'queued' ? 'job failed; queued again' : `job reported ${inputs[i].outcome}`;
            log.debug({ jobId: res.id, taskId: res.taskId ?? undefined, state, runAt: res.job?.runAt }, msg);
        }
    });
}
//# sourceMappingURL=job-pipelines.js.map