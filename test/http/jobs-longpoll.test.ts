/** Long-polling workers: woken by LISTEN/NOTIFY from any instance, by timer for future runAt, never by polling. */
import request from 'supertest';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { type JobsApi, jobsApi, sleep } from './jobs-support.js';

let tdb: TestDatabase;
let a: JobsApi;
let b: JobsApi;

beforeAll(async () => {
  tdb = await createTestDatabase();
  a = await jobsApi({ db: tdb.db, instanceId: 'a' });
  b = await jobsApi({ db: tdb.connect(), instanceId: 'b' }); // a second instance: its own pool and listener
});
afterAll(async () => {
  await a?.stack.close();
  await b?.stack.close();
  await tdb?.destroy();
});
beforeEach(async () => {
  await tdb.db.pool.query('DELETE FROM job');
});

const timed = async <T>(p: Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const v = await p;
  return [v, performance.now() - t0];
};

/** Resolves once `n` requests wait in the instance's hub. */
async function waiting(api: JobsApi, n: number) {
  for (let i = 0; i < 400 && api.stack.services.workers.waiters.size < n; i++) await sleep(5);
  expect(api.stack.services.workers.waiters.size).toBe(n);
}

describe('runnability at millisecond precision', () => {
  it('leases a job whose run_at lies within the millisecond the clock reads', async () => {
    const clock = new ManualClock('2026-11-20T10:00:00.000Z');
    const m = await jobsApi({ db: tdb.connect(2), clock, instanceId: 'manual' });
    try {
      await tdb.db.pool.query(`INSERT INTO job (type, run_at) VALUES ('micro', $1::timestamptz + interval '0.3 milliseconds')`, [
        clock.now(),
      ]);
      expect(await m.lease({ worker: 'w', types: ['micro'] })).toHaveLength(1);
      await tdb.db.pool.query(`INSERT INTO job (type, run_at) VALUES ('micro', $1::timestamptz + interval '1 millisecond')`, [clock.now()]);
      expect(await m.lease({ worker: 'w', types: ['micro'] })).toHaveLength(0);
      clock.advance(1);
      expect(await m.lease({ worker: 'w', types: ['micro'] })).toHaveLength(1);
    } finally {
      await m.stack.close();
    }
  });
});

describe('long-poll', () => {
  it('wakes for a job inserted by plain SQL whose run_at has microseconds past the service clock', async () => {
    for (let round = 0; round < 10; round++) {
      const poll = a.post('/jobs/next', { worker: 'w', wait: '3s' });
      await waiting(a, 1);
      const t0 = performance.now();
      await tdb.db.pool.query(`INSERT INTO job (type, run_at) VALUES ('sql.insert', clock_timestamp() + interval '0.3 milliseconds')`);
      const res = await poll;
      expect(res.status, `round ${round}`).toBe(200);
      expect(performance.now() - t0).toBeLessThan(1_000);
    }
  });

  it('answers 204 when nothing becomes runnable within wait', async () => {
    const [res, ms] = await timed(a.post('/jobs/next', { worker: 'w', wait: '300ms' }));
    expect(res.status).toBe(204);
    expect(res.body).toEqual({});
    expect(ms).toBeGreaterThanOrEqual(290);
    expect(ms).toBeLessThan(1_500);
  });

  it('wakes a waiting worker quickly when a second instance inserts a job', async () => {
    for (let round = 0; round < 5; round++) {
      const poll = a.post('/jobs/next', { worker: 'w', wait: '20s' }).then((r) => [r, performance.now()] as const);
      await waiting(a, 1);
      const t0 = performance.now();
      const created = await b.create({ type: 'wake', args: { round } });
      const [res, answeredAt] = await poll;
      expect(res.status).toBe(200);
      expect(res.body.jobs[0].id).toBe(created.id);
      expect(answeredAt - t0).toBeLessThan(500);
    }
  });

  it('wakes a waiting worker when a job is inserted by plain SQL in a transaction of its own', async () => {
    const poll = a.post('/jobs/next', { worker: 'w', wait: '20s' });
    await waiting(a, 1);
    const client = await tdb.db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO job (type, run_at) VALUES ('sql', now())`);
      await sleep(100);
      expect(a.stack.services.workers.waiters.size).toBe(1); // not before the commit
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const [res, ms] = await timed(poll);
    expect(res.status).toBe(200);
    expect(res.body.jobs[0].type).toBe('sql');
    expect(ms).toBeLessThan(500);
  });

  it('wakes a waiting worker when a job with a future runAt becomes due', async () => {
    const runAt = new Date(Date.now() + 400);
    await b.create({ type: 'later', runAt: runAt.toISOString() });
    const res = await a.post('/jobs/next', { worker: 'w', wait: '10s' });
    const answeredAt = Date.now();
    expect(res.status).toBe(200);
    expect(answeredAt).toBeGreaterThanOrEqual(runAt.getTime());
    expect(answeredAt - runAt.getTime()).toBeLessThan(500);
  });

  it('wakes a waiting worker when a job is queued again by retry, by PATCH runAt or after a failure', async () => {
    const job = await a.create({ type: 'again', runAt: new Date(Date.now() + 3_600_000).toISOString() });
    let poll = a.post('/jobs/next', { worker: 'w', wait: '20s' });
    await waiting(a, 1);
    expect((await b.patch(`/jobs/${job.id}`, { runAt: new Date().toISOString() })).status).toBe(200);
    let [res, ms] = await timed(poll);
    expect(res.status).toBe(200);
    expect(ms).toBeLessThan(500);
    const leased = res.body.jobs[0];

    poll = a.post('/jobs/next', { worker: 'w', wait: '20s' });
    await waiting(a, 1);
    await b.post(`/jobs/${leased.id}/failed`, { leaseToken: leased.leaseToken, error: 'x', retryIn: '300ms' });
    [res, ms] = await timed(poll);
    expect(res.status).toBe(200);
    expect(ms).toBeGreaterThanOrEqual(250);
    expect(ms).toBeLessThan(800);
    const again = res.body.jobs[0];

    await b.post(`/jobs/${again.id}/cancel`);
    poll = a.post('/jobs/next', { worker: 'w', wait: '20s' });
    await waiting(a, 1);
    await b.post(`/jobs/${again.id}/retry`);
    [res, ms] = await timed(poll);
    expect(res.status).toBe(200);
    expect(ms).toBeLessThan(500);
  });

  it('wakes only the waiters whose filters match', async () => {
    const mail = a.post('/jobs/next', { worker: 'm', types: ['mail'], wait: '3s' });
    const sms = a.post('/jobs/next', { worker: 's', types: ['sms'], wait: '20s' });
    await waiting(a, 2);
    await b.create({ type: 'sms' });
    const res = await sms;
    expect(res.status).toBe(200);
    expect(res.body.jobs[0].type).toBe('sms');
    expect(a.stack.services.workers.waiters.size).toBe(1);
    await b.create({ type: 'mail' });
    expect((await mail).status).toBe(200);
  });

  it('does not let a crowd of waiters each query for the one job that arrived', async () => {
    const polls = Array.from({ length: 20 }, (_, i) => a.post('/jobs/next', { worker: `w${i}`, wait: '2s' }));
    await waiting(a, 20);
    const leaser = a.stack.services.workers.leaser.stats;
    const before = leaser.statements;
    await b.create({ type: 'one' });
    await sleep(300);
    expect(leaser.statements - before).toBeLessThanOrEqual(3);
    const answers = await Promise.all(polls);
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    expect(answers.filter((r) => r.status === 204)).toHaveLength(19);
  });

  it('hands a burst of jobs to every waiting worker, oldest waiter first', async () => {
    // one at a time, so that the order in which they wait is known
    const polls: ReturnType<JobsApi['post']>[] = [];
    for (let i = 0; i < 10; i++) {
      polls.push(a.post('/jobs/next', { worker: `w${i}`, wait: '10s' }));
      await waiting(a, i + 1);
    }
    const [, ms] = await timed(
      (async () => {
        await b.post('/jobs/batch', { jobs: Array.from({ length: 10 }, (_, i) => ({ type: 'burst', args: { i } })) });
        return Promise.all(polls);
      })(),
    );
    const answers = await Promise.all(polls);
    expect(answers.every((r) => r.status === 200 && r.body.jobs.length === 1)).toBe(true);
    expect(new Set(answers.map((r) => r.body.jobs[0].id)).size).toBe(10);
    expect(answers[0]!.body.jobs[0].args).toEqual({ i: 0 });
    expect(ms).toBeLessThan(1_000);
  });

  it('costs the database nothing per idle waiting worker', async () => {
    const polls = Array.from({ length: 50 }, (_, i) => a.post('/jobs/next', { worker: `idle${i}`, wait: '3s' }));
    try {
      await waiting(a, 50);
      await sleep(100);
      // every statement of an instance checks a connection out of one of its two pools first
      let checkouts = 0;
      const count = () => void checkouts++;
      const pools = [a, b].flatMap((api) => [api.stack.ctx.db.pool, api.stack.ctx.db.protocol]);
      for (const p of pools) p.on('acquire', count);
      const leaser = { ...a.stack.services.workers.leaser.stats };
      const hub = { ...a.stack.services.workers.waiters.stats };
      await sleep(1_500);
      for (const p of pools) p.removeListener('acquire', count);
      expect(checkouts).toBe(0);
      expect(a.stack.services.workers.leaser.stats.statements).toBe(leaser.statements);
      expect(a.stack.services.workers.waiters.stats.earliestQueries).toBe(hub.earliestQueries);
    } finally {
      await Promise.allSettled(polls); // never leave requests behind, whatever failed above
    }
    expect((await Promise.all(polls)).every((r) => r.status === 204)).toBe(true);
  });

  it('does not lease for a waiting worker whose client went away', async () => {
    const req = request(a.stack.app.server).post('/jobs/next').send({ worker: 'gone', wait: '20s' });
    req.end(() => undefined);
    await waiting(a, 1);
    req.abort();
    for (let i = 0; i < 100 && a.stack.services.workers.waiters.size > 0; i++) await sleep(5);
    expect(a.stack.services.workers.waiters.size).toBe(0);
    const job = await b.create({ type: 'orphan' });
    await sleep(200);
    expect((await a.get(`/jobs/${job.id}`)).body.state).toBe('queued');
  });
});

describe('shutdown', () => {
  it('answers every waiting worker with 204 at once and leases nothing afterwards', async () => {
    const c = await jobsApi({ db: tdb.connect(), instanceId: 'c' });
    try {
      const polls = Array.from({ length: 5 }, (_, i) => c.post('/jobs/next', { worker: `w${i}`, wait: '30s' }));
      await waiting(c, 5);
      const t0 = performance.now();
      c.stack.services.workers.shutdown();
      const answers = await Promise.all(polls);
      expect(performance.now() - t0).toBeLessThan(2_000); // at once, against a wait of 30 s
      expect(answers.map((r) => r.status)).toEqual([204, 204, 204, 204, 204]);
      await c.create({ type: 'after-shutdown' });
      expect((await c.post('/jobs/next', { worker: 'late', wait: '10s' })).status).toBe(204);
      expect((await a.lease({ worker: 'other-instance', types: ['after-shutdown'] })).map((j) => j.type)).toEqual(['after-shutdown']);
    } finally {
      await c.stack.close();
    }
  });
});
