/**
 * One-shot jobs: producers (create), reading and managing (get, list, patch, cancel, retry, bulk,
 * history, explain) and the worker protocol (lease, heartbeat, report). One class of ~500 lines on
 * purpose: these share the group committers of inserts and reports, the lease combiner and the
 * long-poll waiters, whose state must be one per instance; what is not shared lives beside it
 * (batch-committer.ts, lease-combiner.ts, job-waiters.ts, and the pure rules in src/domain).
 */
import { retryOnDeadlock } from '../db/database.js';
import { type Executor, withTransaction } from '../db/executor.js';
import { CHANNELS } from '../db/notifications.js';
import { ConflictError, DomainError, NotFoundError } from '../domain/errors.js';
import {
  backoffJitter,
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_ATTEMPTS,
  type Job,
  type JobState,
  type LeasedJob,
  type NewJob,
  type RandomSource,
  shouldCancel,
} from '../domain/job.js';
import {
  type ChangeResult,
  isJobId,
  jobCancel,
  jobCancelMatching,
  jobEventRows,
  type JobFilter,
  jobFindRetryableWithKeys,
  jobRetryMatching,
  jobEarliestFutureRunAt,
  jobFindOpenByUniqueKeys,
  jobGet,
  jobHeartbeat,
  type JobInsertRow,
  jobInsert,
  jobInsertMany,
  claimAgain,
  jobLease,
  jobReleaseLeases,
  type LeaseResult,
  type LeaseSlot,
  jobPatch,
  type JobPatch,
  jobReport,
  type JobSearchFilter,
  jobRetry,
  jobSearch,
  type ReportInput,
  type ReportResult,
  type ReportVerdict,
} from '../repositories/jobs.js';
import { type Explanation, explainJob } from '../domain/explain.js';
import { type JobEvent, jobHistory } from '../domain/job-history.js';
import { flowFactsOf, jobsAhead } from '../repositories/flow.js';
import type { ServiceContext } from './context.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { JobWaiters } from './job-waiters.js';
import { filterKey, LeaseCombiner, type LeaseFilter } from './lease-combiner.js';
import { BatchCommitter } from './batch-committer.js';

export interface LeaseRequest {
  worker: string;
  types?: readonly string[] | undefined;
  groups?: readonly string[] | undefined;
  /** Long-poll: milliseconds to wait for a job (0: answer at once). */
  waitMs?: number | undefined;
  leaseMs?: number | undefined;
  limit?: number | undefined;
}

/** The next jobs a worker asks for with its reports (POST /jobs/reports `next`). */
export type NextLeaseRequest = Omit<LeaseRequest, 'waitMs'>;

export interface HeartbeatRequest {
  leaseToken: string;
  leaseMs?: number | undefined;
  progress?: unknown;
  state?: unknown;
}

export interface HeartbeatAnswer {
  leaseExpiresAt: Date | null;
  deadline: Date | null;
  cancel: boolean;
}

/** A worker's report as it arrives; the service draws the backoff's jitter for it. */
export type ReportRequest = Omit<ReportInput, 'jitter'>;

export type { ReportVerdict };

export interface ReportAnswer {
  id: string;
  verdict: ReportVerdict;
  job?: Job;
  /** Why a report was refused (not-found, lease-lost), in words the worker's operator can act on. */
  detail?: string;
}

export interface JobListRequest extends Omit<JobSearchFilter, 'beforeId'> {
  cursor?: string | undefined;
}

const UNIQUE_RETRIES = 5;
/** Jobs per statement of a bulk action. */
const BULK_BATCH = 500;

function leaseLost(id: string, outcome: string, state: JobState | null, tokenMatches: boolean): DomainError {
  return new DomainError('lease_lost', leaseLostDetail(id, outcome, state, tokenMatches));
}

export function leaseLostDetail(id: string, outcome: string, state: JobState | null, tokenMatches: boolean): string {
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

/** One-shot jobs and the worker protocol (lease, heartbeat, report). */
export class JobService {
  /** Where backoff jitter comes from; tests may replace it. */
  random: RandomSource = Math.random;
  readonly waiters: JobWaiters;
  /** Finished/failed reports of concurrent single requests, committed together. */
  readonly completer: BatchCommitter<ReportInput, ReportResult>;
  /** Jobs created by concurrent single requests, inserted together. */
  readonly inserter: BatchCommitter<JobInsertRow, Job | null>;
  /** Lease requests of concurrent workers, claimed together. */
  readonly leaser: LeaseCombiner;
  private stopped = false;

  constructor(readonly ctx: ServiceContext) {
    // Asks of 100 jobs or more are claimed on their own (see CombinerOptions.soloLimit).
    this.leaser = new LeaseCombiner((filter, slots) => this.claim(filter, slots), {
      maxSlots: 500,
      maxInFlight: 2,
      maxRounds: 20,
      soloLimit: 100,
    });
    this.waiters = new JobWaiters({
      clock: ctx.clock,
      logger: ctx.logger,
      earliest: (now) => jobEarliestFutureRunAt(ctx.db, now),
    });
    ctx.notifications.subscribe(CHANNELS.jobs, (payload) => this.waiters.notify(payload));
    this.completer = new BatchCommitter<ReportInput, ReportResult>(
      (inputs) => this.writeReports(inputs),
      { maxBatch: 1000, maxInFlight: 2 },
      ctx.logger,
    );
    this.inserter = new BatchCommitter<JobInsertRow, Job | null>(
      (rows) => {
        const now = this.ctx.clock.now();
        return rows.length === 1 ? jobInsert(this.db, rows[0]!, now).then((j) => [j]) : jobInsertMany(this.db, rows, now);
      },
      { maxBatch: 1000, maxInFlight: 2 },
      ctx.logger,
    );
  }

  private get db() {
    return this.ctx.db;
  }

  /** On shutdown: stop leasing and answer every waiting long-poll with 204 at once. */
  shutdown(): void {
    this.stopped = true;
    this.waiters.shutdown();
  }

  // -------------------------------------------------------------------------------------------
  // Producers

  private insertRow(j: NewJob, now: Date): JobInsertRow {
    return {
      type: j.type,
      group: j.group ?? 'default',
      args: j.args ?? null,
      subject: j.subject ?? null,
      submitter: j.submitter ?? null,
      priority: j.priority ?? 0,
      runAt: j.runAt ?? now,
      maxAttempts: j.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      uniqueKey: j.uniqueKey ?? null,
      timebox: j.timebox ?? null,
      traceparent: j.traceparent ?? null,
    };
  }

  /**
   * Creates a job; with the uniqueKey of an open job, returns that job instead (created: false),
   * atomically under concurrency (the partial unique index decides). Creations of concurrent
   * requests are inserted together (one statement, one commit).
   */
  async create(input: NewJob): Promise<{ job: Job; created: boolean }> {
    const row = this.insertRow(input, this.ctx.clock.now());
    for (let i = 0; i < UNIQUE_RETRIES; i++) {
      const job = await this.inserter.submit(row);
      if (job) {
        this.ctx.logger.debug({ jobId: job.id, type: job.type }, 'job created');
        return { job, created: true };
      }
      const held = (await jobFindOpenByUniqueKeys(this.db, [row.uniqueKey!])).get(row.uniqueKey!);
      if (held) return { job: held, created: false };
      // the holder finished between the two statements: insert again
    }
    throw new DomainError('unavailable', 'The uniqueKey changed hands too often to settle; retry the request.');
  }

  /**
   * Creates many jobs, all or nothing, in the order given: one statement, or, when uniqueKeys may
   * need settling over several statements, one transaction.
   */
  async createMany(inputs: readonly NewJob[]): Promise<Job[]> {
    const now = this.ctx.clock.now();
    const rows = inputs.map((j) => this.insertRow(j, now));
    const out = rows.some((r) => r.uniqueKey)
      ? await withTransaction(this.db, (tx) => this.insertSettlingKeys(tx, rows, now))
      : await jobInsertMany(this.db, rows, now);
    this.ctx.logger.debug({ jobs: out.length }, 'job batch created');
    return out as Job[];
  }

  private async insertSettlingKeys(db: Executor, rows: JobInsertRow[], now: Date): Promise<Job[]> {
    const out: (Job | null)[] = await jobInsertMany(db, rows, now);
    for (let round = 0; round < UNIQUE_RETRIES; round++) {
      const missing = out.flatMap((j, i) => (j === null ? [i] : []));
      if (missing.length === 0) break;
      const held = await jobFindOpenByUniqueKeys(
        db,
        missing.map((i) => rows[i]!.uniqueKey!),
      );
      const still: number[] = [];
      for (const i of missing) {
        const job = held.get(rows[i]!.uniqueKey!);
        if (job) out[i] = job;
        else still.push(i);
      }
      if (still.length === 0) break;
      const again = await jobInsertMany(
        db,
        still.map((i) => rows[i]!),
        now,
      );
      still.forEach((i, k) => (out[i] = again[k] ?? null));
    }
    if (out.some((j) => j === null)) {
      throw new DomainError('unavailable', 'Some uniqueKeys changed hands too often to settle; retry the request.');
    }
    return out as Job[];
  }

  // -------------------------------------------------------------------------------------------
  // Reading and managing

  async get(id: string): Promise<Job> {
    const job = await jobGet(this.db, id);
    if (!job) throw new NotFoundError(`There is no job ${id}.`);
    return job;
  }

  /**
   * Cancels the queued and running jobs a filter selects, at most `limit`, in statements of at most
   * BULK_BATCH jobs each (each its own short transaction: the worker loop's rows are never held
   * long, and rows it holds are skipped).
   */
  async cancelMatching(filter: JobFilter, limit: number, actor: string | null): Promise<number> {
    let affected = 0;
    while (affected < limit) {
      const n = await jobCancelMatching(this.db, filter, Math.min(BULK_BATCH, limit - affected), this.ctx.clock.now(), actor);
      affected += n;
      if (n === 0) break;
    }
    this.ctx.logger.info({ filter, affected, actor }, 'jobs cancelled in bulk');
    return affected;
  }

  /**
   * Queues again the failed, dropped and cancelled jobs a filter selects, at most `limit`, in
   * statements of at most BULK_BATCH jobs; a job whose uniqueKey another open job holds stays as it is.
   */
  async retryMatching(filter: JobFilter, limit: number, actor: string | null): Promise<number> {
    let affected = 0;
    while (affected < limit) {
      const n = await jobRetryMatching(this.db, filter, Math.min(BULK_BATCH, limit - affected), this.ctx.clock.now(), actor);
      affected += n;
      if (n === 0) break;
    }
    if (affected < limit) {
      for (const id of await jobFindRetryableWithKeys(this.db, filter, limit - affected)) {
        const r = await jobRetry(this.db, id, this.ctx.clock.now(), actor);
        if (r.outcome === 'ok') affected++;
      }
    }
    this.ctx.logger.info({ filter, affected, actor }, 'jobs queued again in bulk');
    return affected;
  }

  /** Why a job is not running (see domain/explain.ts). */
  async explain(id: string): Promise<{ job: Job } & Explanation> {
    const job = await this.get(id);
    const now = this.ctx.clock.now();
    if (job.state !== 'queued') return { job, ...explainJob(job, [], { count: 0, capped: false }, now) };
    const [facts, ahead] = await Promise.all([flowFactsOf(this.db, job.type, job.group, now), jobsAhead(this.db, job, now, 10_000)]);
    return { job, ...explainJob(job, facts, ahead, now) };
  }

  /** The job's history, oldest first (see domain/job-history.ts). */
  async events(id: string): Promise<JobEvent[]> {
    const job = await this.get(id);
    const stored = await jobEventRows(this.db, id);
    return jobHistory(job, stored);
  }

  async list(req: JobListRequest): Promise<{ items: Job[]; nextCursor: string | null }> {
    const beforeId = req.cursor === undefined ? undefined : decodeCursor('j', req.cursor, isJobId);
    const { jobs: items, resumeBelow } = await jobSearch(this.db, { ...req, beforeId, limit: req.limit + 1 });
    const more = items.length > req.limit;
    if (more) items.length = req.limit;
    // a content search behind a large backlog may end a page early, and says where to go on
    const next = more ? items[items.length - 1]!.id : resumeBelow;
    return { items, nextCursor: next === null ? null : encodeCursor('j', next) };
  }

  private jobOrThrow(id: string, r: ChangeResult | { outcome: 'unique_conflict' }, what: string, allowed: string): Job {
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

  async patch(id: string, patch: JobPatch, actor: string | null = null): Promise<Job> {
    const r = await jobPatch(this.db, id, patch, this.ctx.clock.now(), actor);
    const job = this.jobOrThrow(id, r, 'changing priority or runAt', 'queued');
    this.ctx.logger.debug({ jobId: id, ...patch }, 'job changed');
    return job;
  }

  async cancel(id: string, actor: string | null = null): Promise<Job> {
    const r = await jobCancel(this.db, id, this.ctx.clock.now(), actor);
    const job = this.jobOrThrow(id, r, 'cancelling', 'queued or running');
    this.ctx.logger.info({ jobId: id, taskId: job.periodicTaskId ?? undefined, worker: job.worker ?? undefined }, 'job cancelled');
    return job;
  }

  async retry(id: string, actor: string | null = null): Promise<Job> {
    const r = await jobRetry(this.db, id, this.ctx.clock.now(), actor);
    const job = this.jobOrThrow(id, r, 'retrying', 'failed, dropped or cancelled');
    this.ctx.logger.info({ jobId: id, taskId: job.periodicTaskId ?? undefined }, 'job queued again by retry');
    return job;
  }

  // -------------------------------------------------------------------------------------------
  // Workers

  /**
   * Leases up to `limit` jobs; with `waitMs`, waits (long-poll) until some become runnable. An
   * empty answer means 204. After shutdown() nothing is leased.
   */
  async next(req: LeaseRequest, signal?: AbortSignal): Promise<LeasedJob[]> {
    if (this.stopped) return [];
    const filter = { types: req.types, groups: req.groups };
    const ask = { worker: req.worker, limit: req.limit ?? 1, leaseMs: req.leaseMs ?? DEFAULT_LEASE_MS };
    const attempt = () => (this.stopped ? Promise.resolve([]) : this.leaser.lease(filter, ask));
    const seen = this.waiters.sequence();
    let jobs = await attempt();
    if (jobs.length === 0 && req.waitMs && !this.stopped) {
      jobs = await this.waiters.wait({ key: filterKey(filter), limit: ask.limit, waitMs: req.waitMs, attempt, seenSequence: seen, signal });
    }
    if (signal?.aborted && jobs.length > 0) {
      // the worker went away while its claim was running: nobody will work on these
      const released = await jobReleaseLeases(this.db, jobs, this.ctx.clock.now());
      this.ctx.logger.info(
        { jobIds: jobs.map((j) => j.id), released, worker: req.worker },
        'gave back jobs leased for a worker that disconnected',
      );
      return [];
    }
    if (jobs.length > 0) this.ctx.metrics?.jobsLeased(jobs);
    return jobs;
  }

  /** One claim statement (for the LeaseCombiner), retried on a deadlock, logged. */
  private async claim(filter: LeaseFilter, slots: LeaseSlot[]): Promise<LeaseResult> {
    // two claims (or a claim and the scheduler) may lock the same task rows in another order
    const r = await retryOnDeadlock(() =>
      jobLease(this.db, { now: this.ctx.clock.now(), types: filter.types, groups: filter.groups, slots }),
    );
    this.logLease(r);
    return r;
  }

  private logLease(r: LeaseResult): void {
    const log = this.ctx.logger;
    for (const d of r.dropped) {
      log.info({ jobId: d.id, taskId: d.taskId, error: d.error }, 'job dropped at lease: it would begin too early');
    }
    if (log.isLevelEnabled('debug')) {
      for (const j of r.leased) {
        log.debug(
          { jobId: j.id, taskId: j.periodicTaskId ?? undefined, worker: j.worker, attempt: j.attempts, leaseExpiresAt: j.leaseExpiresAt },
          'job leased',
        );
      }
    }
  }

  /**
   * Gives a lease back: the job is queued again at once, the attempt not counted (a worker that
   * stops before it began the work, or gives up its jobs when it shuts down). Repeating it is a 409:
   * the token is no longer the job's lease.
   */
  async release(id: string, leaseToken: string): Promise<Job> {
    const released = await jobReleaseLeases(this.db, [{ id, leaseToken }], this.ctx.clock.now());
    const job = await this.get(id);
    if (released === 0) {
      throw new DomainError(
        'lease_lost',
        `The lease token is not the current lease of job ${id} (the job is ${job.state} now): there is no lease of it to give back.`,
      );
    }
    this.ctx.logger.info({ jobId: id, type: job.type }, 'lease given back');
    return job;
  }

  async heartbeat(id: string, req: HeartbeatRequest): Promise<HeartbeatAnswer> {
    const now = this.ctx.clock.now();
    const r = await jobHeartbeat(this.db, {
      id,
      leaseToken: req.leaseToken,
      now,
      leaseMs: req.leaseMs,
      progress: req.progress,
      state: req.state,
    });
    if (r.outcome === 'not_found') throw new NotFoundError(`There is no job ${id}.`);
    if (r.outcome === 'lease_lost') throw leaseLost(id, 'heartbeat', r.state, r.tokenMatches);
    const cancel = shouldCancel({ state: r.state, deadline: r.deadline }, now);
    this.ctx.logger.debug({ jobId: id, taskId: r.periodicTaskId ?? undefined, cancel, savedState: req.state !== undefined }, 'heartbeat');
    return { leaseExpiresAt: r.leaseExpiresAt, deadline: r.deadline, cancel };
  }

  private toInput(r: ReportRequest): ReportInput {
    return {
      id: r.id,
      leaseToken: r.leaseToken,
      outcome: r.outcome,
      result: r.result,
      error: r.error,
      retryInMs: r.retryInMs,
      state: r.state,
      jitter: backoffJitter(this.random),
    };
  }

  private async writeReports(inputs: ReportInput[], withJobs = true): Promise<ReportResult[]> {
    const results = await jobReport(this.db, inputs, this.ctx.clock.now(), { jobs: withJobs });
    this.reported(inputs, results);
    return results;
  }

  /** Logs and counts reports once they are committed. */
  private reported(inputs: readonly ReportInput[], results: readonly ReportResult[]): void {
    this.logReports(inputs, results);
    const metrics = this.ctx.metrics;
    if (metrics) {
      for (const r of results) {
        if (r.verdict !== 'applied' || r.type === null) continue;
        const state = r.currentState;
        if (state === 'finished' || state === 'failed') metrics.jobCompleted(r.type, state);
        else if (state === 'queued') metrics.jobCompleted(r.type, 'requeued');
      }
    }
  }

  private logReports(inputs: readonly ReportInput[], results: readonly ReportResult[]): void {
    const log = this.ctx.logger;
    const debug = log.isLevelEnabled('debug');
    results.forEach((res, i) => {
      const state = res.currentState;
      if (res.verdict === 'not-found' || res.verdict === 'lease-lost') {
        log.info({ jobId: res.id, outcome: inputs[i]!.outcome, verdict: res.verdict, state }, 'report refused');
      } else if (state === 'failed') {
        log.info({ jobId: res.id, taskId: res.taskId ?? undefined, attempts: res.attempts ?? undefined }, 'job failed');
      } else if (debug) {
        const msg = state === 'queued' ? 'job failed; queued again' : `job reported ${inputs[i]!.outcome}`;
        log.debug({ jobId: res.id, taskId: res.taskId ?? undefined, state, runAt: res.job?.runAt }, msg);
      }
    });
  }

  /** One finished/failed report (through the completer: concurrent reports share a statement). */
  async report(req: ReportRequest): Promise<Job> {
    const res = await this.completer.submit(this.toInput(req));
    if (res.verdict === 'not-found') throw new NotFoundError(`There is no job ${req.id}.`);
    if (res.verdict === 'lease-lost') throw leaseLost(req.id, req.outcome, res.currentState, res.tokenMatches);
    return res.job!;
  }

  /**
   * Many reports in one request: one statement; each answered as its single report would be, with
   * the job after the report only when `withJobs` (fetching and sending 100 full jobs costs more
   * than applying the reports).
   */
  async reportMany(reqs: readonly ReportRequest[], opts: { withJobs?: boolean } = {}): Promise<ReportAnswer[]> {
    const inputs = reqs.map((r) => this.toInput(r));
    return this.answers(reqs, await this.writeReports(inputs, opts.withJobs ?? false));
  }

  /**
   * Many reports, and the worker's next jobs leased in the same transaction: the flow-control slots
   * the reported jobs held pass straight to the jobs leased after them (no other lease can take
   * them in between, and none is free in between), so a binding limit stays at its limit while a
   * worker keeps reporting and leasing. Without a free permit or a runnable job, `leased` is empty:
   * the worker's long-poll waits for the rest. Never waits itself.
   */
  async reportManyAndLease(
    reqs: readonly ReportRequest[],
    next: NextLeaseRequest,
    opts: { withJobs?: boolean } = {},
  ): Promise<{ answers: ReportAnswer[]; leased: LeasedJob[] }> {
    const inputs = reqs.map((r) => this.toInput(r));
    const filter = { types: next.types, groups: next.groups };
    const slot = { worker: next.worker, leaseMs: next.leaseMs ?? DEFAULT_LEASE_MS };
    const limit = next.limit ?? 1;
    // the reports and the claims lock job, task and permit rows another transaction may lock in
    // another order: on a deadlock the whole transaction runs again (nothing of it was applied)
    const { results, claims } = await retryOnDeadlock(() =>
      this.db.protocolTransaction(async (tx) => {
        const results = await jobReport(tx, inputs, this.ctx.clock.now(), { jobs: opts.withJobs ?? false });
        // a claim may leave slots empty (the same rule as the LeaseCombiner's): a few more claims
        // in the same transaction fill them
        const claims: LeaseResult[] = [];
        for (let round = 0, got = 0; round < NEXT_CLAIM_ROUNDS && got < limit && !this.stopped; round++) {
          const r = await jobLease(tx, { now: this.ctx.clock.now(), ...filter, slots: Array.from({ length: limit - got }, () => slot) });
          claims.push(r);
          got += r.leased.length;
          if (!claimAgain(r)) break;
        }
        return { results, claims };
      }),
    );
    // logged and counted once committed
    this.reported(inputs, results);
    for (const r of claims) this.logLease(r);
    const leased = claims.flatMap((r) => r.leased);
    if (leased.length > 0) this.ctx.metrics?.jobsLeased(leased);
    return { answers: this.answers(reqs, results), leased };
  }

  private answers(reqs: readonly ReportRequest[], results: readonly ReportResult[]): ReportAnswer[] {
    return results.map((res, i) => {
      if (res.verdict === 'applied' || res.verdict === 'repeat') {
        return res.job ? { id: res.id, verdict: res.verdict, job: res.job } : { id: res.id, verdict: res.verdict };
      }
      const detail =
        res.verdict === 'not-found'
          ? `There is no job ${res.id}.`
          : leaseLostDetail(res.id, reqs[i]!.outcome, res.currentState, res.tokenMatches);
      return { id: res.id, verdict: res.verdict, detail };
    });
  }
}
