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
 *   `retryIn` when the error carries one). Reports go in batches through POST /jobs/reports.
 * - For a job of a periodic task, `ctx.saveState(s)` saves state at once (a heartbeat) and hands it
 *   to the task's next run as `job.taskState`; so does returning an object with a `state` field
 *   (the rest of it is the result).
 * - stop() stops leasing (its own long-poll is abandoned: the server gives back what it had
 *   claimed for it), waits for running handlers up to `stopTimeoutMs`, then aborts the rest and
 *   gives their leases back (POST /jobs/{id}/release: queued again at once, the attempt not
 *   counted), and sends the reports still queued.
 * - 503s and connection errors are retried with a capped exponential back-off: a server restart
 *   does not stop the worker. Reports are retried too (repeating a report is harmless).
 * - Load-aware leasing: above `maxEventLoopUtilization` or `maxLoadAverage` it asks for no jobs.
 */
import { EventEmitter } from 'node:events';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { createJobclockClient, type JobclockClient, type LeasedJob } from './client.js';

export type { LeasedJob };

/** What a handler gets besides its job. */
export interface JobContext {
  /** Aborted when the job must stop: cancelled, past its deadline, its lease lost, or the worker stopping. */
  readonly signal: AbortSignal;
  /** What the previous run of the job's periodic task saved (null for one-shot jobs). */
  readonly taskState: unknown;
  /** Shows progress on the job now (a heartbeat). */
  progress(progress: unknown): Promise<void>;
  /** Saves state on the periodic task now (a heartbeat) and with the final report. */
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
  /** Another fetch (tests, proxies). */
  fetch?: typeof fetch;
  /** The time, for deadlines (default Date.now). */
  now?: () => number;
}

interface Running {
  job: LeasedJob;
  controller: AbortController;
  heartbeat: NodeJS.Timeout | null;
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
  private readonly api: JobclockClient;
  private readonly handlers: Record<string, Handler>;
  private readonly types: string[];
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly waitMs: number;
  private readonly stopTimeoutMs: number;
  private readonly reportDelayMs: number;
  private readonly maxBackoffMs: number;
  private readonly now: () => number;
  private readonly options: WorkerOptions;
  private readonly running = new Map<string, Running>();
  private slotFreed: (() => void) | null = null;
  private leaseLoop: Promise<void> | null = null;
  private leasing: AbortController | null = null;
  private stopping = false;
  private reports: Report[] = [];
  private reportTimer: NodeJS.Timeout | null = null;
  private sending = new Set<Promise<void>>();
  private leaseAnswered = false;
  private readonly fetch: typeof fetch;
  private readonly leaseUrl: string;
  private readonly headers: Record<string, string>;
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
    this.waitMs = Math.min(options.waitMs ?? 30_000, 60_000);
    this.stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
    this.reportDelayMs = options.reportDelayMs ?? 5;
    this.maxBackoffMs = options.maxBackoffMs ?? 5_000;
    this.now = options.now ?? Date.now;
    this.id = options.workerId ?? `${os.hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    this.api = createJobclockClient({ url: options.url, token: options.token, ...(options.fetch ? { fetch: options.fetch } : {}) });
    this.fetch = options.fetch ?? fetch;
    this.leaseUrl = `${options.url.replace(/\/+$/, '')}/jobs/next`;
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
    this.leaseLoop = this.loop();
  }

  /**
   * Stops leasing, waits up to `timeoutMs` (default: the stopTimeoutMs option) for running
   * handlers, aborts and gives back the rest, and sends every queued report.
   */
  async stop(timeoutMs = this.stopTimeoutMs): Promise<void> {
    this.stopping = true;
    if (!this.leaseAnswered) this.leasing?.abort();
    this.slotFreed?.();
    await this.leaseLoop;
    this.leaseLoop = null;
    const ended = this.untilIdle();
    const timedOut = await Promise.race([ended.then(() => false), sleep(timeoutMs).then(() => true)]);
    if (timedOut) {
      // Handlers still running: they are told to stop, and their jobs go back to the queue now
      // (a handler that ignores its signal may still be running; its report would be refused).
      await Promise.all(
        [...this.running.values()].map(async (r) => {
          r.controller.abort(new JobStopped('worker-stopping', 'The worker is stopping; the job was given back.'));
          await this.giveBack(r);
        }),
      );
    }
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
      const free = this.concurrency - this.running.size;
      if (free <= 0) {
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
   * One long-poll. Sent with fetch itself (the hot path): once its answer has begun to arrive, stop()
   * no longer aborts it, since the jobs in it are leased already and are run (or given back).
   */
  private async lease(limit: number, signal: AbortSignal): Promise<LeasedJob[]> {
    this.leaseAnswered = false;
    let res: Response;
    try {
      res = await this.fetch(this.leaseUrl, {
        method: 'POST',
        headers: this.headers,
        body: JSON.stringify({ worker: this.id, types: this.types, limit, wait: `${this.waitMs}ms`, lease: `${this.leaseMs}ms` }),
        signal,
      });
      this.leaseAnswered = true;
      if (res.status === 204) {
        await res.body?.cancel();
        return [];
      }
      const body = (await res.json()) as unknown;
      if (res.status === 200) return (body as { jobs: LeasedJob[] }).jobs;
      throw this.httpError('POST /jobs/next', res, body);
    } catch (err) {
      if (err instanceof HttpError || err instanceof Unavailable) throw err;
      if (signal.aborted) return [];
      throw new Unavailable(`POST /jobs/next: ${(err as Error).message}`, { cause: err });
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
      controller: new AbortController(),
      heartbeat: null,
      deadline: null,
      progress: undefined,
      state: null,
      settled: false,
    };
    this.running.set(job.id, r);
    r.heartbeat = setInterval(() => void this.beat(r).catch(() => undefined), Math.max(100, Math.floor(this.leaseMs / 3)));
    if (job.deadline) {
      const left = Date.parse(job.deadline) - this.now();
      r.deadline = setTimeout(
        () => r.controller.abort(new JobStopped('deadline', `Job ${job.id} passed its deadline ${job.deadline}.`)),
        Math.max(0, left),
      );
    }
    const ctx: JobContext = {
      signal: r.controller.signal,
      taskState: job.taskState ?? null,
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
          ...(r.state ? { state: r.state.value } : {}),
        });
        this.emit('job:fail', job, err);
      }
    })();
  }

  /** The handler returned or threw: its timers stop and its slot is free. */
  private end(r: Running): void {
    if (r.heartbeat) clearInterval(r.heartbeat);
    if (r.deadline) clearTimeout(r.deadline);
    r.heartbeat = r.deadline = null;
    if (this.running.get(r.job.id) === r) this.running.delete(r.job.id);
    this.slotFreed?.();
  }

  private async beat(r: Running): Promise<void> {
    if (r.settled) return;
    let res;
    try {
      res = await this.api.POST('/jobs/{id}/heartbeat', {
        params: { path: { id: r.job.id } },
        body: {
          leaseToken: r.job.leaseToken,
          ...(r.progress === undefined ? {} : { progress: r.progress }),
          ...(r.state ? { state: r.state.value } : {}),
        },
      });
    } catch (err) {
      this.report(new Unavailable(`POST /jobs/${r.job.id}/heartbeat: ${(err as Error).message}`, { cause: err }));
      return; // the next beat tries again, well inside the lease
    }
    if (res.data) {
      if (res.data.cancel && !r.controller.signal.aborted) {
        r.controller.abort(new JobStopped('cancelled', `Job ${r.job.id} was cancelled or passed its deadline: stop and report.`));
      }
      return;
    }
    if (res.response.status === 404 || res.response.status === 409) {
      this.lost(r, problemDetail(res.error) ?? `heartbeat answered ${res.response.status}`);
      return;
    }
    this.report(this.httpError(`POST /jobs/${r.job.id}/heartbeat`, res.response, res.error));
  }

  private lost(r: Running, detail: string): void {
    if (r.settled) return;
    r.settled = true;
    if (r.heartbeat) clearInterval(r.heartbeat);
    r.heartbeat = null;
    r.controller.abort(new JobStopped('lease-lost', `The lease of job ${r.job.id} was lost: ${detail}`));
    this.emit('job:lost', r.job, detail);
  }

  private async giveBack(r: Running): Promise<void> {
    if (r.settled) return;
    r.settled = true;
    this.end(r);
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await this.api.POST('/jobs/{id}/release', {
          params: { path: { id: r.job.id } },
          body: { leaseToken: r.job.leaseToken },
        });
        if (res.data) this.emit('job:released', r.job);
        else this.emit('job:lost', r.job, problemDetail(res.error) ?? `release answered ${res.response.status}`);
        return;
      } catch (err) {
        if (attempt >= 5) {
          this.report(new Unavailable(`POST /jobs/${r.job.id}/release: ${(err as Error).message}`, { cause: err }));
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
      const p = this.send(batch).finally(() => this.sending.delete(p));
      this.sending.add(p);
    }
    if (all) await Promise.all([...this.sending]);
  }

  private async send(batch: Report[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await this.api.POST('/jobs/reports', { body: { reports: batch as never } });
        if (res.data) {
          for (const [i, result] of res.data.results.entries()) {
            if (result.status !== 200) {
              const job = { id: batch[i]!.id } as LeasedJob;
              this.emit('job:lost', job, result.detail ?? `report answered ${result.status}`);
            }
          }
          return;
        }
        throw this.httpError('POST /jobs/reports', res.response, res.error);
      } catch (err) {
        const retriable = err instanceof Unavailable || !(err instanceof HttpError);
        this.report(err);
        if (!retriable || (this.stopping && attempt >= 8)) return;
        await sleep(this.backoff(attempt));
      }
    }
  }

  // -------------------------------------------------------------------------------------------

  private backoff(failures: number): number {
    const ms = Math.min(this.maxBackoffMs, 100 * 2 ** Math.min(failures - 1, 10));
    return ms / 2 + Math.random() * (ms / 2);
  }

  private httpError(what: string, response: Response, problem: unknown): Error {
    const detail = problemDetail(problem) ?? response.statusText;
    if (response.status === 503 || response.status === 502 || response.status === 504) {
      return new Unavailable(`${what}: ${response.status} ${detail}`);
    }
    return new HttpError(`${what}: ${response.status} ${detail}`, response.status);
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
