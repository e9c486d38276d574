/**
 * One-shot jobs for producers (create, one or many) and for those who read and manage them (get,
 * list, patch, cancel, retry, bulk actions, history, explain). The worker protocol is
 * worker-protocol.ts; concurrent creations meet in the instance's JobPipelines (job-pipelines.ts).
 */
import { retryOnDeadlock } from '../db/database.js';
import { withTransaction } from '../db/executor.js';
import { resolveGraph, startStates } from '../domain/dependencies.js';
import { ConflictError, DomainError, InvalidInputError, NotFoundError } from '../domain/errors.js';
import { DEFAULT_MAX_ATTEMPTS, isFinal } from '../domain/job.js';
import { isJobId, jobCancel, jobCancelMatching, jobEventRows, jobFindRetryableWithKeys, jobRetryMatching, jobFindOpenByUniqueKeys, jobFindRecentByUniqueKeys, jobGet, jobWatch, jobInsertMany, jobDebounce, jobDrawIds, jobInsertGraph, jobMarkDependedOn, jobNeighbours, jobDependents, jobPatch, jobRetry, jobSearch, } from '../repositories/jobs.js';
import { explainJob, explainWaiting } from '../domain/explain.js';
import { jobHistory } from '../domain/job-history.js';
import { flowFactsOf, jobsAhead } from '../repositories/flow.js';
import { typeDefaultsOf } from '../repositories/type-defaults.js';
import { decodeCursor, encodeCursor } from './cursor.js';
const isDebounced = (r) => r.uniqueKey !== null && r.debounce !== null && r.debounce !== undefined;
const UNIQUE_RETRIES = 5;
/** Jobs per statement of a bulk action. */
const BULK_BATCH = 500;
/** Creating, reading and managing one-shot jobs. */
export class JobService {
    ctx;
    pipelines;
    constructor(ctx, pipelines) {
        this.ctx = ctx;
        this.pipelines = pipelines;
    }
    /** Jobs created by concurrent single requests, inserted together (the instance's one inserter). */
    get inserter() {
        return this.pipelines.inserter;
    }
    /** The type defaults of concurrent single creations, read together. */
    get typeDefaults() {
        return this.pipelines.typeDefaults;
    }
    /** Debounced submissions of concurrent single requests, upserted together (absent: one statement each). */
    get debouncer() {
        return this.pipelines.debouncer;
    }
    get db() {
        return this.ctx.db;
    }
    /** A row to insert: what the job says, else its type's defaults, else jobclock's. */
    insertRow(j, now, d) {
        return {
            type: j.type,
            group: j.group ?? 'default',
            args: j.args ?? null,
            subject: j.subject ?? null,
            submitter: j.submitter ?? null,
            priority: j.priority ?? d?.priority ?? 0,
            runAt: j.runAt ?? now,
            maxAttempts: j.maxAttempts ?? d?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
            uniqueKey: j.uniqueKey ?? null,
            timebox: j.timebox !== undefined ? j.timebox : (d?.timebox ?? null),
            traceparent: j.traceparent ?? null,
            startBy: j.startBy !== undefined ? j.startBy : d?.startWithin !== undefined ? new Date(now.getTime() + d.startWithin) : null,
            uniqueFor: j.uniqueKey ? (j.uniqueFor ?? null) : null,
            debounce: j.uniqueKey ? (j.debounce ?? null) : null,
            debounceMax: j.uniqueKey && j.debounce !== undefined ? (j.debounceMax ?? 10 * j.debounce) : null,
        };
    }
    /** A debounced submission (one statement: a new job, or the queued holder takes the args). */
    async debounce(db, row, now) {
        // a single request's submission shares one statement (and one commit) with concurrent ones, as
        // creations do; inside a transaction (a batch) it is a statement of its own
        const debouncer = db === this.db ? this.pipelines.debouncer : undefined;
        const r = debouncer ? await debouncer.submit(row) : await jobDebounce(db, row, now);
        this.ctx.logger.debug({ jobId: r.job.id, type: r.job.type, uniqueKey: row.uniqueKey, created: r.created }, 'job debounced');
        return r;
    }
    /**
     * Creates a job; with the uniqueKey of an open job, returns that job instead (created: false),
     * atomically under concurrency (the partial unique index decides). Creations of concurrent
     * requests are inserted together (one statement, one commit).
     */
    async create(input) {
        if (input.after !== undefined && input.after.length > 0) {
            const [job] = await this.createGraph([input], () => '');
            return { job: job, created: true };
        }
        // concurrent requests read their types' defaults in one statement
        const defaults = await this.pipelines.typeDefaults.submit(input.type);
        const row = this.insertRow(input, this.ctx.clock.now(), defaults);
        if (isDebounced(row))
            return this.debounce(this.db, row, this.ctx.clock.now());
        for (let i = 0; i < UNIQUE_RETRIES; i++) {
            const job = await this.inserter.submit(row);
            if (job) {
                this.ctx.logger.debug({ jobId: job.id, type: job.type }, 'job created');
                return { job, created: true };
            }
            const held = (await this.holders(this.db, [row], this.ctx.clock.now())).get(row.uniqueKey);
            if (held)
                return { job: held, created: false };
            // the holder finished between the two statements: insert again
        }
        throw new DomainError('unavailable', 'The uniqueKey changed hands too often to settle; retry the request.');
    }
    /**
     * Creates many jobs, all or nothing, in the order given: one statement, or, when uniqueKeys may
     * need settling over several statements, one transaction.
     */
    async createMany(inputs) {
        if (inputs.some((j) => j.ref !== undefined || (j.after !== undefined && j.after.length > 0))) {
            return this.createGraph(inputs, (i) => `/jobs/${i}`);
        }
        const now = this.ctx.clock.now();
        const defaults = await typeDefaultsOf(this.db, inputs.map((j) => j.type));
        const rows = inputs.map((j) => this.insertRow(j, now, defaults.get(j.type)));
        const out = rows.some(isDebounced)
            ? await withTransaction(this.db, (tx) => this.insertDebouncing(tx, rows, now))
            : rows.some((r) => r.uniqueKey)
                ? await withTransaction(this.db, (tx) => this.insertSettlingKeys(tx, rows, now))
                : await jobInsertMany(this.db, rows, now);
        this.ctx.logger.debug({ jobs: out.length }, 'job batch created');
        return out;
    }
    /** A batch with debounced bodies: the others inserted together, then the debounced ones in order. */
    async insertDebouncing(db, rows, now) {
        const plain = rows.flatMap((r, i) => (isDebounced(r) ? [] : [i]));
        const out = new Array(rows.length);
        const inserted = await this.insertSettlingKeys(db, plain.map((i) => rows[i]), now);
        plain.forEach((i, k) => (out[i] = inserted[k]));
        for (const [i, r] of rows.entries())
            if (isDebounced(r))
                out[i] = (await this.debounce(db, r, now)).job;
        return out;
    }
    /**
     * Creates jobs that run after others (see domain/dependencies.ts), all or nothing, in one
     * transaction: the existing dependencies are marked and read under lock, ids are drawn for the
     * new jobs, and the jobs are inserted in the states they start in, with the graph's edges.
     * `path(i)` names body i in a 400.
     */
    async createGraph(inputs, path) {
        const keyed = inputs.flatMap((j, i) => j.uniqueKey ? [{ path: `${path(i)}/uniqueKey`, message: 'a batch of jobs with ref or after carries no uniqueKey' }] : []);
        if (keyed.length > 0)
            throw new InvalidInputError('Jobs created with dependencies cannot carry a uniqueKey.', keyed);
        const graph = resolveGraph(inputs, isJobId, path);
        const now = this.ctx.clock.now();
        const defaults = await typeDefaultsOf(this.db, inputs.map((j) => j.type));
        const rows = inputs.map((j) => this.insertRow(j, now, defaults.get(j.type)));
        // The dependencies are locked in id order; a report ending some of them locks its jobs in the
        // order of its plan (a bitmap scan: their order on disk), so the two may deadlock. PostgreSQL
        // then rolls one back whole: a report is made again (writeReports), and so is this.
        const jobs = await retryOnDeadlock(() => withTransaction(this.db, async (tx) => {
            const states = await jobMarkDependedOn(tx, graph.existingIds);
            const unknown = inputs.flatMap((_, i) => graph.existing[i].filter((id) => !states.has(id)).map((id) => ({ path: `${path(i)}/after`, message: `there is no job ${id}` })));
            if (unknown.length > 0)
                throw new InvalidInputError('A job runs after a job that does not exist.', unknown);
            const ids = await jobDrawIds(tx, inputs.length);
            const starts = startStates(graph, inputs, states, (i) => ids[i]);
            const dependedOn = new Set(graph.inBatch.flat());
            return jobInsertGraph(tx, rows.map((row, i) => ({
                row,
                id: ids[i],
                after: graph.named[i].map((d) => (typeof d === 'number' ? ids[d] : d)),
                runs: inputs[i].onDependencyFailure === 'run',
                ...starts[i],
                dependedOn: dependedOn.has(i),
            })), now);
        }));
        const waiting = jobs.filter((j) => j.state === 'waiting').length;
        this.ctx.logger.debug({ jobs: jobs.length, waiting, jobIds: jobs.length <= 10 ? jobs.map((j) => j.id) : undefined }, 'job graph created');
        return jobs;
    }
    async insertSettlingKeys(db, rows, now) {
        const out = await jobInsertMany(db, rows, now);
        for (let round = 0; round < UNIQUE_RETRIES; round++) {
            const missing = out.flatMap((j, i) => (j === null ? [i] : []));
            if (missing.length === 0)
                break;
            const held = await this.holders(db, missing.map((i) => rows[i]), now);
            const still = [];
            for (const i of missing) {
                const job = held.get(rows[i].uniqueKey);
                if (job)
                    out[i] = job;
                else
                    still.push(i);
            }
            if (still.length === 0)
                break;
            const again = await jobInsertMany(db, still.map((i) => rows[i]), now);
            still.forEach((i, k) => (out[i] = again[k] ?? null));
        }
        if (out.some((j) => j === null)) {
            throw new DomainError('unavailable', 'Some uniqueKeys changed hands too often to settle; retry the request.');
        }
        return out;
    }
    /** The jobs holding the keys of rows that were not inserted: open ones, and with uniqueFor recent final ones. */
    async holders(db, rows, now) {
        const open = rows.filter((r) => !r.uniqueFor).map((r) => r.uniqueKey);
        const recent = rows.filter((r) => r.uniqueFor).map((r) => ({ key: r.uniqueKey, forMs: r.uniqueFor }));
        // one after the other: inside a transaction both run on its one connection
        const a = await jobFindOpenByUniqueKeys(db, open);
        const b = await jobFindRecentByUniqueKeys(db, recent, now);
        for (const [k, j] of b)
            a.set(k, j);
        return a;
    }
    /**
     * With `waitMs`: answers as soon as the job is final (woken by its end's notification, from any
     * instance), or with the job as it is when the wait runs out.
     */
    async get(id, waitMs = 0) {
        const waiters = this.pipelines.endWaiters;
        if (waitMs > 0 && waiters) {
            if (waiters.full) {
                throw new DomainError('unavailable', `${waiters.maxWaiting} requests already wait for jobs on this instance; retry shortly or without wait.`);
            }
            const read = async () => {
                const job = await jobGet(this.db, id);
                if (!job)
                    throw new NotFoundError(`There is no job ${id}.`);
                return job;
            };
            return waiters.wait(id, waitMs, async () => {
                const job = await jobWatch(this.db, id);
                if (!job)
                    throw new NotFoundError(`There is no job ${id}.`);
                // a report that committed while the mark waited for the row was not told (the job was
                // not watched yet), and the mark's snapshot predates it: a fresh read sees its outcome
                return isFinal(job.state) ? job : read();
            }, read, (job) => isFinal(job.state));
        }
        const job = await jobGet(this.db, id);
        if (!job)
            throw new NotFoundError(`There is no job ${id}.`);
        return job;
    }
    /**
     * Cancels the queued and running jobs a filter selects, at most `limit`, in statements of at most
     * BULK_BATCH jobs each (each its own short transaction: the worker loop's rows are never held
     * long, and rows it holds are skipped).
     */
    async cancelMatching(filter, limit, actor) {
        let affected = 0;
        while (affected < limit) {
            const { cancelled: n, ofTasks } = await jobCancelMatching(this.db, filter, Math.min(BULK_BATCH, limit - affected), this.ctx.clock.now(), actor);
            affected += n;
            this.ctx.metrics?.periodicSlots('cancelled', ofTasks);
            if (n === 0)
                break;
        }
        this.ctx.logger.info({ filter, affected, actor }, 'jobs cancelled in bulk');
        return affected;
    }
    /**
     * Queues again the failed, dropped and cancelled jobs a filter selects, at most `limit`, in
     * statements of at most BULK_BATCH jobs; a job whose uniqueKey another open job holds stays as it is.
     */
    async retryMatching(filter, limit, actor) {
        let affected = 0;
        while (affected < limit) {
            const n = await jobRetryMatching(this.db, filter, Math.min(BULK_BATCH, limit - affected), this.ctx.clock.now(), actor);
            affected += n;
            if (n === 0)
                break;
        }
        if (affected < limit) {
            for (const id of await jobFindRetryableWithKeys(this.db, filter, limit - affected)) {
                const r = await jobRetry(this.db, id, this.ctx.clock.now(), actor);
                if (r.outcome === 'ok')
                    affected++;
            }
        }
        this.ctx.logger.info({ filter, affected, actor }, 'jobs queued again in bulk');
        return affected;
    }
    /** Why a job is not running (see domain/explain.ts). */
    async explain(id) {
        const job = await this.get(id);
        const now = this.ctx.clock.now();
        if (job.state === 'waiting') {
            const open = (await jobNeighbours(this.db, job.after)).filter((d) => !isFinal(d.state));
            return { job, ...explainWaiting(job, open) };
        }
        if (job.state !== 'queued')
            return { job, ...explainJob(job, [], { count: 0, capped: false }, now) };
        const [facts, ahead] = await Promise.all([flowFactsOf(this.db, job.type, job.group, now), jobsAhead(this.db, job, now, 10_000)]);
        return { job, ...explainJob(job, facts, ahead, now) };
    }
    /** The jobs `id` runs after and those that run after it, at most `limit` of each. */
    async graph(id, limit) {
        const job = await this.get(id);
        const dependencies = await jobNeighbours(this.db, job.after.slice(0, limit));
        const dependents = await jobDependents(this.db, id, limit);
        return {
            job,
            dependencies,
            dependents: dependents.items,
            more: { dependencies: Math.max(0, job.after.length - limit), dependents: dependents.total - dependents.items.length },
        };
    }
    /** The job's history, oldest first (see domain/job-history.ts). */
    async events(id) {
        const job = await this.get(id);
        const stored = await jobEventRows(this.db, id);
        return jobHistory(job, stored);
    }
    async list(req) {
        const beforeId = req.cursor === undefined ? undefined : decodeCursor('j', req.cursor, isJobId);
        const { jobs: items, resumeBelow } = await jobSearch(this.db, { ...req, beforeId, limit: req.limit + 1 });
        const more = items.length > req.limit;
        if (more)
            items.length = req.limit;
        // a content search behind a large backlog may end a page early, and says where to go on
        const next = more ? items[items.length - 1].id : resumeBelow;
        return { items, nextCursor: next === null ? null : encodeCursor('j', next) };
    }
    jobOrThrow(id, r, what, allowed) {
        switch (r.outcome) {
            case 'ok':
                return r.job;
            case 'not_found':
                throw new NotFoundError(`There is no job ${id}.`);
            case 'unique_conflict':
                throw new ConflictError(`Job ${id} cannot be queued again: another open job holds its uniqueKey.`);
            case 'conflict':
                throw new ConflictError(`Job ${id} is ${r.job.state}; ${what} needs a job that is ${allowed}.`);
        }
    }
    async patch(id, patch, actor = null) {
        const r = await jobPatch(this.db, id, patch, this.ctx.clock.now(), actor);
        const job = this.jobOrThrow(id, r, 'changing priority or runAt', 'queued');
        this.ctx.logger.debug({ jobId: id, ...patch }, 'job changed');
        return job;
    }
    async cancel(id, actor = null) {
        const r = await jobCancel(this.db, id, this.ctx.clock.now(), actor);
        const job = this.jobOrThrow(id, r, 'cancelling', 'queued or running');
        if (job.periodicTaskId !== null)
            this.ctx.metrics?.periodicSlots('cancelled');
        this.ctx.logger.info({ jobId: id, taskId: job.periodicTaskId ?? undefined, worker: job.worker ?? undefined }, 'job cancelled');
        return job;
    }
    async retry(id, actor = null) {
        const r = await jobRetry(this.db, id, this.ctx.clock.now(), actor);
        const job = this.jobOrThrow(id, r, 'retrying', 'failed, dropped or cancelled');
        this.ctx.logger.info({ jobId: id, taskId: job.periodicTaskId ?? undefined }, 'job queued again by retry');
        return job;
    }
}
//# sourceMappingURL=jobs.js.map