/**
 * The worker protocol: lease (with long-polls), heartbeat, release and reports, single and batched.
 * Concurrent requests meet in the instance's JobPipelines (job-pipelines.ts), which this service
 * is handed rather than builds, so that there is one of each per instance.
 */
import { retryOnDeadlock } from '../db/database.js';
import { LeaseLostError, NotFoundError } from '../domain/errors.js';
import { backoffJitter, shouldCancel } from '../domain/job.js';
import { claimAgain, jobDependencyOutcomes, jobGet, jobHeartbeat, jobLease, jobReleaseLeases, jobReport, } from '../repositories/jobs.js';
import { logLease, reported, writeReports } from './job-pipelines.js';
import { filterKey } from './lease-combiner.js';
export function leaseLostDetail(id, outcome, state, tokenMatches) {
    if (!tokenMatches) {
        return `The lease token is not the current lease of job ${id} (the job is ${state ?? 'gone'} now): the lease was lost, to the lease reaper or to another worker.`;
    }
    if (state === 'running') {
        return `Job ${id} is past its deadline and the grace after it; the ${outcome} report came too late.`;
    }
    return `Job ${id} was already reported with this token and is ${state} now; a ${outcome} report does not match.`;
}
/** How many claims a report with `next` makes at most to fill its slots (the answer never waits). */
const NEXT_CLAIM_ROUNDS = 3;
/**
 * The leases of jobs with dependencies carry how each dependency ended, with its result: one read
 * for the jobs of a lease that have some; a lease of jobs without dependencies reads nothing.
 */
async function handDownDependencies(db, jobs) {
    const ids = new Set(jobs.flatMap((j) => j.after));
    if (ids.size === 0)
        return;
    const outcomes = await jobDependencyOutcomes(db, [...ids]);
    for (const j of jobs)
        if (j.after.length > 0)
            j.dependencies = j.after.flatMap((id) => outcomes.get(id) ?? []);
}
/** Lease, heartbeat, release and report. */
export class WorkerProtocolService {
    ctx;
    pipelines;
    /** Where backoff jitter comes from; tests may replace it. */
    random = Math.random;
    stopped = false;
    /** When (epoch ms) a lease handed out jobs or a report came last: see busy(). */
    lastActiveMs = Number.NEGATIVE_INFINITY;
    constructor(ctx, pipelines) {
        this.ctx = ctx;
        this.pipelines = pipelines;
    }
    /** Waiting long-polls (the instance's one JobWaiters). */
    get waiters() {
        return this.pipelines.waiters;
    }
    /** Lease requests of concurrent workers, claimed together (the instance's one LeaseCombiner). */
    get leaser() {
        return this.pipelines.leaser;
    }
    /** Finished/failed reports of concurrent single requests, committed together. */
    get completer() {
        return this.pipelines.completer;
    }
    get db() {
        return this.ctx.db;
    }
    /**
     * Whether workers leased or reported within the last `withinMs` on this instance: the delivery
     * engine sends webhooks at a budgeted rate meanwhile, so that they do not take the CPU the
     * workers' requests need.
     */
    busy(withinMs = 1_000) {
        return this.ctx.clock.now().getTime() - this.lastActiveMs < withinMs;
    }
    active() {
        this.lastActiveMs = this.ctx.clock.now().getTime();
    }
    /** On shutdown: stop leasing, answer every waiting long-poll with 204 and every wait for a job with the job, at once. */
    shutdown() {
        this.stopped = true;
        this.pipelines.waiters.shutdown();
        this.pipelines.endWaiters.shutdown();
    }
    /**
     * Leases up to `limit` jobs; with `waitMs`, waits (long-poll) until some become runnable. An
     * empty answer means 204. After shutdown() nothing is leased.
     */
    async next(req, signal) {
        if (this.stopped)
            return [];
        const filter = { types: req.types, groups: req.groups };
        const ask = { worker: req.worker, limit: req.limit ?? 1, leaseMs: req.leaseMs ?? null };
        const attempt = () => (this.stopped ? Promise.resolve([]) : this.leaser.lease(filter, ask));
        const seen = this.waiters.sequence();
        let jobs = await attempt();
        if (jobs.length === 0 && req.waitMs && !this.stopped) {
            jobs = await this.waiters.wait({ key: filterKey(filter), limit: ask.limit, waitMs: req.waitMs, attempt, seenSequence: seen, signal });
        }
        if (signal?.aborted && jobs.length > 0) {
            // the worker went away while its claim was running: nobody will work on these
            const released = await jobReleaseLeases(this.db, jobs, this.ctx.clock.now());
            this.ctx.logger.info({ jobIds: jobs.map((j) => j.id), released, worker: req.worker }, 'gave back jobs leased for a worker that disconnected');
            return [];
        }
        if (jobs.length > 0) {
            this.active();
            this.ctx.metrics?.jobsLeased(jobs);
        }
        await handDownDependencies(this.db, jobs);
        return jobs;
    }
    /**
     * Gives a lease back: the job is queued again at once, or after `retryInMs` (a snooze), the
     * attempt not counted (a worker that stops before it began the work, gives up its jobs when it
     * shuts down, or finds it cannot run the job now); `state` is saved as after a heartbeat.
     * Repeating it is a 409: the token is no longer the job's lease.
     */
    async release(id, req) {
        const now = this.ctx.clock.now();
        const runAt = req.retryInMs === undefined ? undefined : new Date(now.getTime() + req.retryInMs);
        const released = await jobReleaseLeases(this.db, [{ id, leaseToken: req.leaseToken, runAt, state: req.state }], now, 'released');
        const job = await jobGet(this.db, id);
        if (!job)
            throw new NotFoundError(`There is no job ${id}.`);
        if (released === 0) {
            throw new LeaseLostError(`The lease token is not the current lease of job ${id} (the job is ${job.state} now): there is no lease of it to give back.`);
        }
        this.ctx.logger.info({ jobId: id, type: job.type, runAt: job.runAt }, 'lease given back');
        return job;
    }
    async heartbeat(id, req) {
        const now = this.ctx.clock.now();
        const r = await jobHeartbeat(this.db, {
            id,
            leaseToken: req.leaseToken,
            now,
            leaseMs: req.leaseMs,
            progress: req.progress,
            state: req.state,
        });
        if (r.outcome === 'not_found')
            throw new NotFoundError(`There is no job ${id}.`);
        if (r.outcome === 'lease_lost')
            throw new LeaseLostError(leaseLostDetail(id, 'heartbeat', r.state, r.tokenMatches));
        const cancel = shouldCancel({ state: r.state, deadline: r.deadline }, now);
        this.ctx.logger.debug({ jobId: id, taskId: r.periodicTaskId ?? undefined, cancel, savedState: req.state !== undefined }, 'heartbeat');
        return { leaseExpiresAt: r.leaseExpiresAt, deadline: r.deadline, cancel };
    }
    toInput(r) {
        return {
            id: r.id,
            leaseToken: r.leaseToken,
            outcome: r.outcome,
            result: r.result,
            error: r.error,
            retryInMs: r.retryInMs,
            final: r.final,
            state: r.state,
            jitter: backoffJitter(this.random),
        };
    }
    async report(req, opts = {}) {
        this.active();
        const withJob = opts.withJob ?? true;
        const res = await (withJob ? this.completer : this.pipelines.minimalCompleter).submit(this.toInput(req));
        if (res.verdict === 'not-found')
            throw new NotFoundError(`There is no job ${req.id}.`);
        if (res.verdict === 'lease-lost')
            throw new LeaseLostError(leaseLostDetail(req.id, req.outcome, res.currentState, res.tokenMatches));
        return withJob ? res.job : null;
    }
    /**
     * Many reports in one request: one statement; each answered as its single report would be, with
     * the job after the report only when `withJobs` (fetching and sending 100 full jobs costs more
     * than applying the reports).
     */
    async reportMany(reqs, opts = {}) {
        this.active();
        const inputs = reqs.map((r) => this.toInput(r));
        return this.answers(reqs, await writeReports(this.ctx, inputs, opts.withJobs ?? false));
    }
    /**
     * Many reports, and the worker's next jobs leased in the same transaction: the flow-control slots
     * the reported jobs held pass straight to the jobs leased after them (no other lease can take
     * them in between, and none is free in between), so a binding limit stays at its limit while a
     * worker keeps reporting and leasing. Without a free permit or a runnable job, `leased` is empty:
     * the worker's long-poll waits for the rest. Never waits itself.
     */
    async reportManyAndLease(reqs, next, opts = {}) {
        this.active();
        const inputs = reqs.map((r) => this.toInput(r));
        const filter = { types: next.types, groups: next.groups };
        const slot = { worker: next.worker, leaseMs: next.leaseMs ?? null };
        const limit = next.limit ?? 1;
        // the reports and the claims lock job, task and permit rows another transaction may lock in
        // another order: on a deadlock the whole transaction runs again (nothing of it was applied)
        const { results, claims } = await retryOnDeadlock(() => this.db.protocolTransaction(async (tx) => {
            const results = await jobReport(tx, inputs, this.ctx.clock.now(), { jobs: opts.withJobs ?? false });
            // a claim may leave slots empty (the same rule as the LeaseCombiner's): a few more claims
            // in the same transaction fill them
            const claims = [];
            for (let round = 0, got = 0; round < NEXT_CLAIM_ROUNDS && got < limit && !this.stopped; round++) {
                const r = await jobLease(tx, { now: this.ctx.clock.now(), ...filter, slots: Array.from({ length: limit - got }, () => slot) });
                claims.push(r);
                got += r.leased.length;
                if (!claimAgain(r, round))
                    break;
            }
            return { results, claims };
        }));
        // logged and counted once committed
        reported(this.ctx, inputs, results);
        for (const r of claims)
            logLease(this.ctx, r);
        const leased = claims.flatMap((r) => r.leased);
        if (leased.length > 0)
            this.ctx.metrics?.jobsLeased(leased);
        await handDownDependencies(this.db, leased);
        return { answers: this.answers(reqs, results), leased };
    }
    answers(reqs, results) {
        return results.map((res, i) => {
            if (res.verdict === 'applied' || res.verdict === 'repeat') {
                return res.job ? { id: res.id, verdict: res.verdict, job: res.job } : { id: res.id, verdict: res.verdict };
            }
            const detail = res.verdict === 'not-found'
                ? `There is no job ${res.id}.`
                : leaseLostDetail(res.id, reqs[i].outcome, res.currentState, res.tokenMatches);
            return { id: res.id, verdict: res.verdict, detail };
        });
    }
}
//# sourceMappingURL=worker-protocol.js.map