/** The TypeScript Worker runner (clients/typescript) against the real server and database, over real HTTP. */
import request from 'supertest';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { JobStopped, RetryLater, Worker, type WorkerOptions } from '../../clients/typescript/src/index.js';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.js';
import { bearer, createTestStack, type TestStack, TOKENS } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { useTestStack } from '../support/fixture.js';
import { sleep } from '../support/wait.js';

/** Polls `condition` every 20 ms until it holds, for at most `ms`. */
async function until(condition: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`the condition did not hold within ${ms} ms`);
    await sleep(20);
  }
}

const admin = bearer('admin');
const workerToken = TOKENS.find((t) => t.role === 'worker')!.token;
let tdb: TestDatabase;
let stack: TestStack;
let url: string;
const workers: Worker[] = [];

useTestStack({ tokens: TOKENS, poolSize: 12, clean: ['job', 'job_event', 'periodic_task'] }, (f) => ({ tdb, stack } = f));
beforeAll(async () => {
  url = await stack.app.listen({ host: '127.0.0.1', port: 0 });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop(100)));
});

const newWorker = (options: Omit<WorkerOptions, 'url' | 'token'>, to = () => url) => {
  const w = new Worker({ url: to(), token: workerToken, waitMs: 2_000, ...options });
  workers.push(w);
  return w;
};
const post = (path: string, body: object) => request(stack.app.server).post(path).set('authorization', admin).send(body);
const createJobs = async (n: number, body: object) => {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 1000) {
    const res = await post('/jobs/batch', { jobs: Array.from({ length: Math.min(1000, n - i) }, () => body) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    ids.push(...(res.body.jobs as { id: string }[]).map((j) => j.id));
  }
  return ids;
};
const states = async () => {
  const { rows } = await tdb.db.pool.query<{ state: string; n: string }>('SELECT state, count(*) AS n FROM job GROUP BY state');
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
};
const jobRow = async (id: string) => (await tdb.db.pool.query('SELECT * FROM job WHERE id = $1', [id])).rows[0];

describe('Worker', () => {
  it('runs 2,000 jobs through 4 runners exactly once', async () => {
    const ids = await createJobs(2_000, { type: 'bulk.noop' });
    const runs = new Map<string, number>();
    for (let i = 0; i < 4; i++) {
      await newWorker({
        workerId: `runner-${i}`,
        concurrency: 25,
        handlers: {
          'bulk.noop': async (job) => {
            runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
            await sleep(1);
            return { ok: true };
          },
        },
      }).start();
    }
    await until(async () => (await states()).finished === 2_000, 60_000);
    expect(runs.size).toBe(2_000);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(ids)).toEqual(new Set(runs.keys()));
    const { rows } = await tdb.db.pool.query<{ worker: string; n: string }>('SELECT worker, count(*) AS n FROM job GROUP BY worker');
    expect(rows.length).toBe(4); // every runner took part
  }, 90_000);

  it('keeps a long job leased past its lease with heartbeats, while the lease reaper runs', async () => {
    const [id] = await createJobs(1, { type: 'slow', maxAttempts: 1 });
    const reaper = new LeaseReaper(stack.ctx);
    const reaping = setInterval(() => void reaper.tick(new Date()).catch(() => undefined), 200);
    let runs = 0;
    try {
      await newWorker({
        leaseMs: 1_000,
        handlers: {
          slow: async () => {
            runs++;
            await sleep(3_000);
            return { done: true };
          },
        },
      }).start();
      await until(async () => (await jobRow(id!)).state === 'finished', 10_000);
    } finally {
      clearInterval(reaping);
    }
    expect(runs).toBe(1);
    expect(await jobRow(id!)).toMatchObject({ attempts: 1, result: { done: true } });
  });

  it('aborts the signal when the job is cancelled, and reports in time', async () => {
    const [id] = await createJobs(1, { type: 'cancel.me' });
    let reason: unknown;
    await newWorker({
      leaseMs: 1_000,
      handlers: {
        'cancel.me': (_job, ctx) =>
          new Promise((_resolve, reject) => {
            ctx.signal.addEventListener('abort', () => {
              reason = ctx.signal.reason;
              reject(ctx.signal.reason as Error);
            });
          }),
      },
    }).start();
    await until(async () => (await jobRow(id!)).state === 'running', 5_000);
    const cancelledAt = Date.now();
    expect((await post(`/jobs/${id}/cancel`, {})).status).toBe(200);
    await until(() => reason !== undefined, 5_000);
    expect(Date.now() - cancelledAt).toBeLessThan(1_500); // within a heartbeat (a third of the lease) and a bit
    expect(reason).toBeInstanceOf(JobStopped);
    expect((reason as JobStopped).why).toBe('cancelled');
    // the report arrived: the job stays cancelled and no lease is held
    await until(async () => (await jobRow(id!)).lease_expires_at === null, 5_000);
    expect((await jobRow(id!)).state).toBe('cancelled');
  });

  it('aborts the signal at the deadline and reports the failure within the grace', async () => {
    const [id] = await createJobs(1, { type: 'timeboxed', timebox: '1s', maxAttempts: 1 });
    let reason: unknown;
    await newWorker({
      handlers: {
        timeboxed: (_job, ctx) =>
          new Promise((_resolve, reject) =>
            ctx.signal.addEventListener('abort', () => {
              reason = ctx.signal.reason;
              reject(ctx.signal.reason as Error);
            }),
          ),
      },
    }).start();
    await until(async () => (await jobRow(id!)).state === 'failed', 5_000);
    expect((reason as JobStopped).why).toBe('deadline');
    const job = await jobRow(id!);
    expect(job.error).toMatchObject({ reason: 'deadline', name: 'JobStopped' });
    // the worker's own report (its error above), inside the 1 s grace, whose last millisecond
    // counts (withinGrace); a report later than that would have been refused and the job reaped
    expect(Date.parse(job.finished_at) - Date.parse(job.deadline)).toBeLessThanOrEqual(1_000);
  });

  it('hands the state a run saved to the next run of its periodic task', async () => {
    const task = await post('/periodic-tasks', { id: 'counter', task: 'count', schedule: 'every 1h', concurrencyPolicy: 'forbid' });
    expect(task.status, JSON.stringify(task.body)).toBe(201);
    const seen: unknown[] = [];
    await newWorker({
      handlers: {
        count: (job, ctx) => {
          seen.push(job.taskState);
          const n = ((ctx.taskState as { n?: number } | null)?.n ?? 0) + 1;
          return { state: { n }, counted: n };
        },
      },
    }).start();
    for (let run = 1; run <= 3; run++) {
      const trig = await post('/periodic-tasks/counter/trigger', {});
      expect(trig.status, JSON.stringify(trig.body)).toBe(201);
      await until(async () => (await jobRow(trig.body.id as string)).state === 'finished', 5_000);
      expect((await jobRow(trig.body.id as string)).result).toEqual({ counted: run });
    }
    expect(seen).toEqual([null, { n: 1 }, { n: 2 }]);
  });

  it('saves state at once with ctx.saveState, before the run ends', async () => {
    await post('/periodic-tasks', { id: 'cursor', task: 'cursor', schedule: 'every 1h' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await newWorker({
      handlers: {
        cursor: async (_job, ctx) => {
          await ctx.saveState({ cursor: 'abc' });
          await gate;
        },
      },
    }).start();
    await post('/periodic-tasks/cursor/trigger', {});
    await until(async () => (await tdb.db.pool.query(`SELECT state FROM periodic_task WHERE id = 'cursor'`)).rows[0].state !== null, 5_000);
    expect((await tdb.db.pool.query(`SELECT state FROM periodic_task WHERE id = 'cursor'`)).rows[0].state).toEqual({ cursor: 'abc' });
    release();
  });

  it('stop() with jobs in flight leaves none running: finished, or given back uncounted', async () => {
    await createJobs(6, { type: 'inflight', maxAttempts: 1 });
    const released: string[] = [];
    const w = newWorker({
      concurrency: 6,
      handlers: {
        // three finish quickly once told to stop; three ignore the signal and are given back
        inflight: async (job, ctx) => {
          if (Number(job.id) % 2 === 0) {
            await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
            return { stopped: true };
          }
          await sleep(3_000);
          return { late: true };
        },
      },
    });
    w.on('job:released', (j) => released.push(j.id));
    await w.start();
    await until(async () => (await states()).running === 6, 5_000);
    await w.stop(300);
    const s = await states();
    expect(s.running ?? 0).toBe(0);
    expect(s.queued).toBe(6); // all aborted and given back: queued again, the attempt not counted
    expect(released).toHaveLength(6);
    const { rows } = await tdb.db.pool.query<{ attempts: number }>('SELECT attempts FROM job');
    expect(rows.every((r) => r.attempts === 0)).toBe(true);
    await sleep(3_100); // the handlers that ignored the signal end now: their reports are not sent
    expect((await states()).queued).toBe(6);
  });

  it('stop() waits for handlers that finish within its timeout and sends their reports', async () => {
    await createJobs(5, { type: 'quick' });
    const w = newWorker({
      concurrency: 5,
      handlers: {
        quick: async () => {
          await sleep(300);
          return 1;
        },
      },
    });
    await w.start();
    await until(async () => (await states()).running === 5, 5_000);
    await w.stop(5_000);
    expect(await states()).toEqual({ finished: 5 });
  });

  it('stop() in the middle of a fast stream strands no job: a lease already answering is run', async () => {
    await createJobs(10_000, { type: 'stream' });
    let finished = 0;
    const runners = Array.from({ length: 4 }, (_, i) =>
      newWorker({ workerId: `stream-${i}`, concurrency: 100, handlers: { stream: () => undefined } }),
    );
    for (const w of runners) {
      w.on('job:finish', () => finished++);
      await w.start();
    }
    await until(() => finished >= 2_000, 30_000);
    await Promise.all(runners.map((w) => w.stop(5_000)));
    const s = await states();
    expect(s.running ?? 0).toBe(0); // nothing left leased until its lease expires
    expect(s.finished).toBe(finished); // every job a handler ran was reported
    expect((s.finished ?? 0) + (s.queued ?? 0)).toBe(10_000);
  });

  it('loses nothing when the server restarts mid-run', async () => {
    await createJobs(400, { type: 'restart' });
    const runs = new Map<string, number>();
    const lost: string[] = [];
    // a server of its own for this test, stopped mid-run; a new one comes up on the same port
    const first = await createTestStack({ db: tdb.db, tokens: TOKENS });
    const firstUrl = await first.app.listen({ host: '127.0.0.1', port: 0 });
    let second: TestStack | null = null;
    const w = newWorker(
      {
        concurrency: 10,
        maxBackoffMs: 200,
        handlers: {
          restart: async (job) => {
            runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
            await sleep(10);
          },
        },
      },
      () => firstUrl,
    );
    w.on('job:lost', (j) => lost.push(j.id));
    await w.start();
    try {
      await until(async () => ((await states()).finished ?? 0) >= 100, 20_000);
      await first.close(); // with jobs leased, long-polls waiting and reports in flight
      await sleep(300);
      second = await createTestStack({ db: tdb.db, tokens: TOKENS });
      await second.app.listen({ host: '127.0.0.1', port: Number(new URL(firstUrl).port) });
      await until(async () => (await states()).finished === 400, 30_000);
    } finally {
      await w.stop(1_000);
      await second?.close();
    }
    expect(runs.size).toBe(400);
    // a job runs twice only when its first lease was lost (that report is refused, not applied twice)
    const twice = [...runs.entries()].filter(([, n]) => n > 1).map(([id]) => id);
    expect(twice.every((id) => lost.includes(id))).toBe(true);
    expect(await states()).toEqual({ finished: 400 });
  }, 90_000);

  it('leases its next jobs with its reports, so a binding limit passes its slots on without a long-poll', { timeout: 30_000 }, async () => {
    expect((await request(stack.app.server).patch('/types/handover').set('authorization', admin).send({ concurrency: 3 })).status).toBe(
      200,
    );
    try {
      await createJobs(90, { type: 'handover' });
      const leaseRequests = async () => {
        const text = (await request(stack.app.server).get('/metrics').set('authorization', admin)).text;
        const counts = [...text.matchAll(/^jobclock_http_request_duration_seconds_count\{[^}]*route="\/jobs\/next"[^}]*\} (\d+)/gm)];
        return counts.reduce((sum, m) => sum + Number(m[1]), 0);
      };
      const before = await leaseRequests();
      let running = 0;
      let peak = 0;
      const done = new Set<string>();
      const w = newWorker({
        concurrency: 6,
        handlers: {
          handover: async (job) => {
            peak = Math.max(peak, ++running);
            await sleep(10);
            running--;
            done.add(job.id);
          },
        },
      });
      await w.start();
      await until(async () => (await states()).finished === 90, 20_000);
      expect(done.size).toBe(90);
      expect(peak).toBeLessThanOrEqual(3);
      // most jobs came back in the answers to reports: far fewer long-polls than jobs
      const polls = (await leaseRequests()) - before;
      expect(polls, 'POST /jobs/next requests for 90 jobs').toBeLessThan(10); // 30 without: one per 3 jobs
    } finally {
      await request(stack.app.server).patch('/types/handover').set('authorization', admin).send({ concurrency: null });
    }
  });

  it('leases only the types it has handlers for', async () => {
    await createJobs(20, { type: 'mine' });
    await createJobs(20, { type: 'theirs' });
    await newWorker({ handlers: { mine: () => 'ok' } }).start();
    await until(async () => {
      const { rows } = await tdb.db.pool.query(`SELECT count(*)::int AS n FROM job WHERE type = 'mine' AND state = 'finished'`);
      return rows[0].n === 20;
    }, 10_000);
    await sleep(200);
    const { rows } = await tdb.db.pool.query(`SELECT state, count(*)::int AS n FROM job WHERE type = 'theirs' GROUP BY state`);
    expect(rows).toEqual([{ state: 'queued', n: 20 }]);
  });

  it('reports a thrown error as failed, with the retryIn the error carries', async () => {
    const [id] = await createJobs(1, { type: 'flaky', maxAttempts: 3 });
    const failed: unknown[] = [];
    const w = newWorker({
      handlers: {
        flaky: () => {
          throw new RetryLater('upstream said later', '1h');
        },
      },
    });
    w.on('job:fail', (_job, err) => failed.push(err));
    await w.start();
    await until(async () => (await jobRow(id!)).attempts === 1 && (await jobRow(id!)).state === 'queued', 5_000);
    const job = await jobRow(id!);
    expect(job.error).toMatchObject({ message: 'upstream said later', name: 'RetryLater' });
    const inMs = Date.parse(job.run_at) - Date.now();
    expect(inMs).toBeGreaterThan(3_500_000);
    expect(inMs).toBeLessThanOrEqual(3_600_000);
    expect(failed).toHaveLength(1);
  });

  it('asks for no jobs while the host is busier than its ceiling', async () => {
    await createJobs(3, { type: 'gated' });
    let runs = 0;
    await newWorker({ maxLoadAverage: -1, handlers: { gated: () => void runs++ } }).start();
    await sleep(500);
    expect(runs).toBe(0);
    expect((await states()).queued).toBe(3);
  });

  it('refuses options the server would refuse, saying which', () => {
    expect(() => new Worker({ url, handlers: {} })).toThrow(/at least one handler/);
    expect(() => new Worker({ url, handlers: { a: () => 1 }, leaseMs: 900 })).toThrow(/leaseMs must be from 1000/);
    expect(() => new Worker({ url, handlers: { a: () => 1 }, concurrency: 0 })).toThrow(/concurrency must be/);
  });
});
