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
import type { LeasedJob } from './client.js';

export type { LeasedJob };

/** What a handler gets besides its job. */
export interface JobContext {
  /** Aborted when the job must stop: cancelled, past its deadline, its lease lost, or the worker stopping. */
  readonly signal: AbortSignal;
  /** What the previous run of the job's periodic task saved (null for one-shot jobs). */
  readonly taskState: unknown;
  /** What an earlier attempt of this one-shot job saved with saveState (null if none). */
  readonly checkpoint: unknown;
  /** Shows progress on the job now (a heartbeat). */
  progress(progress: unknown): Promise<void>;
  /** Saves state now (a heartbeat) and with the final report: on the periodic task, or as a one-shot job's checkpoint. */
  saveState(state: unknown): Promise<void>;
  /** Extends the lease now (the worker also does it on its own). */
  heartbeat(): Promise<void>;
}

export type Handler = (job: LeasedJob, ctx: JobContext) => unknown;

/** Thrown by a handler: the job is reported failed and retried after `retryIn` (if attempts remain). */
export class RetryLater extends Error {
  constructor(
    message: string,
    /** A duration ("30s", "5m", "1h30m") or milliseconds. */
    readonly retryIn: string | number,
  ) {
    super(message);
    this.name = 'RetryLater';
  }
}

/** Thrown by a handler: the job is reported failed for good (`final: true`), whatever attempts remain. */
export class FinalFailure extends Error {
  constructor(message: string) {
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
  constructor(
    /** A duration ("30s", "5m", "1h30m") or milliseconds. */
    readonly retryIn: string | number,
    message = 'snoozed',
  ) {
    super(message);
    this.name = 'Snooze';
  }
}

const durationOf = (d: string | number): string => (typeof d === 'string' ? d : `${Math.max(0, Math.round(d))}ms`);

/** Why `ctx.signal` was aborted: its `reason`. */
export class JobStopped extends Error {
  constructor(
    readonly why: 'cancelled' | 'deadline' | 'lease-lost' | 'worker-stopping',
    message: string,
  ) {
    super(message);
    this.name = 'JobStopped';
  }
}

export interface WorkerOptions {
  /** Where jobclock listens, e.g. http://127.0.0.1:3000 */
  url: string;
  token?: string | undefined;
  /** One handler per job type: the worker leases only these types. */
  handlers: Record<string, Handler>;
  /** Jobs run at once (default 8). */
  concurrency?: number;
  /** The worker's name in the jobs it runs (default `<hostname>-<pid>-<random>`). */
  workerId?: string;
  /** The lease asked for, in ms (default 30 s); heartbeats go at a third of it. */
  leaseMs?: number;
  /** How long one lease request waits for a job, in ms (default 30 s, at most 60 s). */
  waitMs?: number;
  /** How long stop() waits for running handlers before it aborts them (default 10 s). */
  stopTimeoutMs?: number;
  /** Reports wait this long for company before they are sent (default 5 ms); at most 100 go together. */
  reportDelayMs?: number;
  /** Ask for no jobs while the event loop is busier than this (0..1, measured over the last second). */
  maxEventLoopUtilization?: number;
  /** Ask for no jobs while the host's 1-minute load average per CPU is above this. */
  maxLoadAverage?: number;
  /** Longest back-off after errors (default 5 s). */
  maxBackoffMs?: number;
  /** Connections to jobclock (default 8): one holds the long-poll, the others carry reports and heartbeats. */
  connections?: number;
  /** The time, for deadlines (default Date.now). */
  now?: () => number;
}

interface Answer {
  status: number;
  body: unknown;
}

interface Running {
  job: LeasedJob;
  /** Made when the handler first looks at ctx.signal, or when the job must stop. */
  controller: AbortController | null;
  /** When the next heartbeat is due (performance.now()). */
  beatAt: number;
  deadline: NodeJS.Timeout | null;
  progress: unknown;
  state: { value: unknown } | null;
  /** Its lease is gone (lost, or given back): no report. */
  settled: boolean;
}

interface Report {
  id: string;
  leaseToken: string;
  outcome: 'finished' | 'failed';
  result?: unknown;
  error?: unknown;
  retryIn?: string;
  final?: boolean;
  state?: unknown;
}

export interface WorkerEvents {
  'job:start': [job: LeasedJob];
  'job:finish': [job: LeasedJob, result: unknown];
  'job:fail': [job: LeasedJob, error: unknown];
  /** The job's lease was lost (expired and taken by another worker, or the job is gone): it was not reported. */
  'job:lost': [job: LeasedJob, detail: string];
  /** Given back on stop(): queued again, the attempt not counted. */
  'job:released': [job: LeasedJob];
  /** An error the worker recovers from (it retries): for logs. */
  error: [error: Error];
}

const MAX_LIMIT = 100;
const MAX_REPORTS = 100;
/** How long stop() lets a lease in flight answer before it abandons it as a waiting long-poll. */
const STOP_LEASE_GRACE_MS = 250;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** A 503 or a connection error: worth retrying. */
class Unavailable extends Error {}

export class Worker extends EventEmitter<WorkerEvents> {
  readonly id: string;
  private readonly handlers: Record<string, Handler>;
  private readonly types: string[];
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly beatEveryMs: number;
  private beats: NodeJS.Timeout | null = null;
  private readonly waitMs: number;
  private readonly stopTimeoutMs: number;
  private readonly reportDelayMs: number;
  private readonly maxBackoffMs: number;
  private readonly now: () => number;
  private readonly options: WorkerOptions;
  private readonly running = new Map<string, Running>();
  private slotFreed: (() => void) | null = null;
  /** Slots promised to the jobs a report batch in flight asks for (`next`). */
  private reserved = 0;
  /** The limit of the long-poll in flight. */
  private polling = 0;
  /** false once a server refused `next` on reports (older than this client): leases go by long-poll only. */
  private nextOnReports = true;
  /** The server refused `final` (older than it): reports go without it. */
  private finalRefused = false;
  private leaseLoop: Promise<void> | null = null;
  private leasing: AbortController | null = null;
  private stopping = false;
  private reports: Report[] = [];
  private reportTimer: NodeJS.Timeout | null = null;
  private sending = new Set<Promise<void>>();
  private leaseAnswered = false;
  private readonly origin: string;
  private readonly prefix: string;
  private readonly headers: Record<string, string>;
  private http: Pool | null = null;
  private elu = performance.eventLoopUtilization();
  private eluAt = 0;
  private eluValue = 0;

  constructor(options: WorkerOptions) {
    super();
    this.options = options;
    this.handlers = { ...options.handlers };
    this.types = Object.keys(this.handlers);
    if (this.types.length === 0) throw new TypeError('Worker: give at least one handler (handlers: { "<type>": async (job, ctx) => … })');
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
  get active(): number {
    return this.running.size;
  }

  /** Starts leasing; resolves at once (the loop runs until stop()). */
  async start(): Promise<void> {
    if (this.leaseLoop) return;
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
  async stop(timeoutMs = this.stopTimeoutMs): Promise<void> {
    this.stopping = true;
    this.slotFreed?.();
    if (this.leasing && this.leaseLoop) {
      // Cutting off a lease whose answer is already on its way would strand its jobs until their
      // leases expire: only a long-poll that is still waiting after a moment is abandoned.
      const returned = await Promise.race([this.leaseLoop.then(() => true), sleep(STOP_LEASE_GRACE_MS).then(() => false)]);
      if (!returned && !this.leaseAnswered) this.leasing?.abort();
    }
    await this.leaseLoop;
    this.leaseLoop = null;
    const ended = this.untilIdle();
    const timedOut = await Promise.race([ended.then(() => false), sleep(timeoutMs).then(() => true)]);
    if (timedOut) {
      // Handlers still running: they are told to stop, and their jobs go back to the queue now
      // (a handler that ignores its signal may still be running; its report would be refused).
      await Promise.all(
        [...this.running.values()].map(async (r) => {
          abort(r, new JobStopped('worker-stopping', 'The worker is stopping; the job was given back.'));
          await this.giveBack(r);
        }),
      );
    }
    await this.flushReports(true);
    const http = this.http;
    this.http = null;
    await http?.close();
  }

  /** Sends the reports queued now and waits for every report in flight to be answered. */
  async flush(): Promise<void> {
    await this.flushReports(true);
  }

  private untilIdle(): Promise<void> {
    return new Promise((resolve) => {
      const check = () => (this.running.size === 0 ? resolve() : setTimeout(check, 10));
      check();
    });
  }

  // -------------------------------------------------------------------------------------------
  // leasing

  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      const free = this.concurrency - this.running.size - this.reserved;
      // Reports about to go out lease the next jobs themselves (their slots pass on in the same
      // transaction): the long-poll waits for their answer and takes what is left.
      if (free <= 0 || (this.reports.length > 0 && this.nextOnReports)) {
        await new Promise<void>((resolve) => (this.slotFreed = resolve));
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
        for (const job of jobs) this.run(job);
      } catch (err) {
        if (this.stopping) break;
        failures++;
        this.report(err);
        await sleep(this.backoff(failures));
      } finally {
        this.leasing = null;
      }
    }
  }

  /**
   * One long-poll. Once its answer has begun to arrive, stop() no longer aborts it, since the jobs
   * in it are leased already and are run (or given back).
   */
  private async lease(limit: number, signal: AbortSignal): Promise<LeasedJob[]> {
    this.leaseAnswered = false;
    this.polling = limit;
    const body = { worker: this.id, types: this.types, limit, wait: `${this.waitMs}ms`, lease: `${this.leaseMs}ms` };
    let res: Answer;
    try {
      res = await this.call('POST', '/jobs/next', body, signal, () => (this.leaseAnswered = true));
    } catch (err) {
      if (signal.aborted) return [];
      throw err;
    } finally {
      this.polling = 0;
    }
    if (res.status === 204) return [];
    if (res.status === 200) return (res.body as { jobs: LeasedJob[] }).jobs;
    throw this.httpError('POST /jobs/next', res);
  }

  /**
   * One request; a connection error is `Unavailable`. `answered` runs when the answer's head
   * arrives, before its body is read.
   */
  private async call(method: 'POST', path: string, body: unknown, signal?: AbortSignal, answered?: () => void): Promise<Answer> {
    const http = this.http;
    if (!http) throw new Unavailable(`${method} ${path}: the worker is stopped`);
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
      let parsed: unknown = null;
      if (text.length > 0) {
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = text;
        }
      }
      return { status: res.statusCode, body: parsed };
    } catch (err) {
      throw new Unavailable(`${method} ${path}: ${(err as Error).message}`, { cause: err });
    }
  }

  private overloaded(): boolean {
    const { maxEventLoopUtilization: maxElu, maxLoadAverage: maxLoad } = this.options;
    if (maxLoad !== undefined && os.loadavg()[0]! / Math.max(1, os.availableParallelism()) > maxLoad) return true;
    if (maxElu !== undefined) {
      const t = performance.now();
      if (t - this.eluAt >= 1_000) {
        const next = performance.eventLoopUtilization();
        this.eluValue = performance.eventLoopUtilization(next, this.elu).utilization;
        this.elu = next;
        this.eluAt = t;
      }
      if (this.eluValue > maxElu) return true;
    }
    return false;
  }

  // -------------------------------------------------------------------------------------------
  // running a job

  private run(job: LeasedJob): void {
    const r: Running = {
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
      r.deadline = setTimeout(
        () => abort(r, new JobStopped('deadline', `Job ${job.id} passed its deadline ${job.deadline}.`)),
        Math.max(0, left),
      );
    }
    const ctx: JobContext = {
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
        if (!handler) throw new Error(`no handler for job type "${job.type}"`);
        let result = await handler(job, ctx);
        if (job.periodicTaskId && result !== null && typeof result === 'object' && !Array.isArray(result) && 'state' in result) {
          const { state, ...rest } = result as Record<string, unknown>;
          r.state = { value: state };
          result = rest;
        }
        this.end(r);
        if (r.settled) return;
        this.enqueue({
          id: job.id,
          leaseToken: job.leaseToken,
          outcome: 'finished',
          ...(result === undefined ? {} : { result }),
          ...(r.state ? { state: r.state.value } : {}),
        });
        this.emit('job:finish', job, result);
      } catch (err) {
        if (err instanceof Snooze) {
          if (r.settled) return this.end(r);
          r.settled = true;
          this.end(r);
          await this.release(job, { retryIn: durationOf(err.retryIn), ...(r.state ? { state: r.state.value } : {}) });
          return;
        }
        this.end(r);
        if (r.settled) return;
        const retryIn = (err as { retryIn?: unknown } | null)?.retryIn;
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
  private end(r: Running): void {
    if (r.deadline) clearTimeout(r.deadline);
    r.deadline = null;
    if (this.running.get(r.job.id) === r) this.running.delete(r.job.id);
    this.slotFreed?.();
  }

  /** Heartbeats the running jobs whose beat is due. */
  private beatDue(): void {
    if (this.running.size === 0) {
      if (this.beats) clearInterval(this.beats);
      this.beats = null;
      return;
    }
    const t = performance.now();
    for (const r of this.running.values()) if (!r.settled && r.beatAt <= t) void this.beat(r).catch(() => undefined);
  }

  private async beat(r: Running): Promise<void> {
    if (r.settled) return;
    r.beatAt = performance.now() + this.beatEveryMs;
    const path = `/jobs/${encodeURIComponent(r.job.id)}/heartbeat`;
    let res: Answer;
    try {
      res = await this.call('POST', path, {
        leaseToken: r.job.leaseToken,
        ...(r.progress === undefined ? {} : { progress: r.progress }),
        ...(r.state ? { state: r.state.value } : {}),
      });
    } catch (err) {
      this.report(err);
      return; // the next beat tries again, well inside the lease
    }
    if (res.status === 200) {
      if ((res.body as { cancel?: boolean }).cancel && !r.controller?.signal.aborted) {
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

  private lost(r: Running, detail: string): void {
    if (r.settled) return;
    r.settled = true;
    abort(r, new JobStopped('lease-lost', `The lease of job ${r.job.id} was lost: ${detail}`));
    this.emit('job:lost', r.job, detail);
  }

  private async giveBack(r: Running): Promise<void> {
    if (r.settled) return;
    r.settled = true;
    this.end(r);
    await this.release(r.job);
  }

  /** Gives a leased job back: queued again at once (or after `retryIn`), the attempt not counted. */
  private async release(job: LeasedJob, extra: { retryIn?: string; state?: unknown } = {}): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await this.call('POST', `/jobs/${encodeURIComponent(job.id)}/release`, { leaseToken: job.leaseToken, ...extra });
        if (res.status === 503 || res.status === 502 || res.status === 504) throw this.httpError(`POST /jobs/${job.id}/release`, res);
        if (res.status === 200) this.emit('job:released', job);
        else this.emit('job:lost', job, problemDetail(res.body) ?? `release answered ${res.status}`);
        return;
      } catch (err) {
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

  private enqueue(report: Report): void {
    this.reports.push(report);
    if (this.reports.length >= MAX_REPORTS) void this.flushReports(false);
    else this.reportTimer ??= setTimeout(() => void this.flushReports(false), this.reportDelayMs);
  }

  /** Sends the queued reports; with `all`, also waits for those in flight. */
  private async flushReports(all: boolean): Promise<void> {
    if (this.reportTimer) clearTimeout(this.reportTimer);
    this.reportTimer = null;
    while (this.reports.length > 0) {
      const batch = this.reports.splice(0, MAX_REPORTS);
      // the batch leases the next jobs into the slots free now (those its own jobs held among
      // them), so under a binding concurrency limit the slots pass on without a gap
      const next =
        this.stopping || !this.nextOnReports ? 0 : Math.min(MAX_LIMIT, this.concurrency - this.running.size - this.reserved - this.polling);
      this.reserved += Math.max(0, next);
      const p = this.send(batch, Math.max(0, next)).finally(() => this.sending.delete(p));
      this.sending.add(p);
    }
    this.slotFreed?.(); // the lease loop sees the reservations
    if (all) await Promise.all([...this.sending]);
  }

  /** Sends one batch of reports, the first try asking for up to `next` jobs with it. */
  private async send(batch: Report[], next: number): Promise<void> {
    if (this.finalRefused) batch = batch.map(withoutFinal);
    let reserved = next;
    const unreserve = () => {
      this.reserved -= reserved;
      reserved = 0;
      this.slotFreed?.();
    };
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          // a retry leases nothing: jobs leased by a try whose answer was lost come back when
          // their leases expire, and a second lease must not add to them
          const body =
            reserved > 0
              ? { reports: batch, next: { worker: this.id, types: this.types, limit: reserved, lease: `${this.leaseMs}ms` } }
              : { reports: batch };
          const res = await this.call('POST', '/jobs/reports', body);
          if (res.status === 200) {
            const answer = res.body as { results: { status: number; detail?: string }[]; jobs?: LeasedJob[] };
            for (const [i, result] of answer.results.entries()) {
              if (result.status !== 200) {
                const job = { id: batch[i]!.id } as LeasedJob;
                this.emit('job:lost', job, result.detail ?? `report answered ${result.status}`);
              }
            }
            const jobs = answer.jobs ?? [];
            unreserve();
            if (this.stopping) await Promise.all(jobs.map((job) => this.release(job)));
            else for (const job of jobs) this.run(job);
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
        } catch (err) {
          unreserve();
          const retriable = err instanceof Unavailable || !(err instanceof HttpError);
          this.report(err);
          if (!retriable || (this.stopping && attempt >= 8)) return;
          await sleep(this.backoff(attempt));
        }
      }
    } finally {
      unreserve();
    }
  }

  // -------------------------------------------------------------------------------------------

  private backoff(failures: number): number {
    const ms = Math.min(this.maxBackoffMs, 100 * 2 ** Math.min(failures - 1, 10));
    return ms / 2 + Math.random() * (ms / 2);
  }

  private httpError(what: string, res: Answer): Error {
    const detail = problemDetail(res.body) ?? (typeof res.body === 'string' ? res.body.slice(0, 200) : '');
    if (res.status === 503 || res.status === 502 || res.status === 504) {
      return new Unavailable(`${what}: ${res.status} ${detail}`);
    }
    return new HttpError(`${what}: ${res.status} ${detail}`, res.status);
  }

  private report(err: unknown): void {
    if (this.listenerCount('error') > 0) this.emit('error', err instanceof Error ? err : new Error(String(err)));
  }
}

/** An answer the worker cannot fix by retrying (401, 403, 400). */
export class HttpError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

function abort(r: Running, reason: JobStopped): void {
  (r.controller ??= new AbortController()).abort(reason);
}

/** A 400 that names a report's `final`: the server does not know it. */
function refusesFinal(problem: unknown): boolean {
  const errors = (problem as { errors?: { path?: unknown }[] } | null)?.errors;
  return Array.isArray(errors) && errors.some((e) => typeof e.path === 'string' && /^\/reports\/\d+\/final$/.test(e.path));
}

const withoutFinal = (r: Report): Report => {
  if (!r.final) return r;
  const { final: _final, ...rest } = r;
  return rest;
};

/** A 400 that names `next`: the server does not know it. */
function refusesNext(problem: unknown): boolean {
  const errors = (problem as { errors?: { path?: unknown }[] } | null)?.errors;
  return Array.isArray(errors) && errors.some((e) => typeof e.path === 'string' && e.path.startsWith('/next'));
}

function problemDetail(problem: unknown): string | undefined {
  const p = problem as { detail?: unknown; title?: unknown } | undefined;
  return typeof p?.detail === 'string' ? p.detail : typeof p?.title === 'string' ? p.title : undefined;
}

/** An error as JSON for the job's `error` field: message, name, and what made it stop. */
function errorJson(err: unknown): unknown {
  if (err instanceof JobStopped) return { message: err.message, name: err.name, reason: err.why };
  if (err instanceof Error) return { message: err.message, name: err.name };
  if (err === undefined || err === null) return { message: 'the handler failed' };
  if (typeof err === 'object') return err;
  return { message: typeof err === 'string' ? err : JSON.stringify(err) };
}
