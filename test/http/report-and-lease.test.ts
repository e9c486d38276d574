/**
 * POST /jobs/reports with `next`: the worker's reports and its next lease in one transaction, so
 * the concurrency slots the reported jobs held pass straight to the next jobs — through the real
 * server and database.
 */
import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { bearer, createTestStack, type TestStack, TOKENS } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { useTestStack } from '../support/fixture.js';
import { peakOverlapIn, sampleMax } from '../support/overlap.js';
import { sleep } from '../support/wait.js';

const admin = bearer('admin');
let tdb: TestDatabase;
let stack: TestStack;

useTestStack({ tokens: TOKENS, poolSize: 12 }, (f) => ({ tdb, stack } = f));
beforeEach(async () => {
  for (const t of ['job', 'flow_policy', 'flow_slot', 'flow_token', 'job_event']) await tdb.db.pool.query(`DELETE FROM ${t}`);
});

interface Leased {
  id: string;
  leaseToken: string;
  type: string;
  group: string;
  worker: string;
}

const post = (url: string, body: object, s: TestStack = stack) => request(s.app.server).post(url).set('authorization', admin).send(body);
const createJobs = async (n: number, job: object) => {
  for (let i = 0; i < n; i += 1000) {
    const jobs = Array.from({ length: Math.min(1000, n - i) }, () => job);
    expect((await post('/jobs/batch', { jobs })).status).toBe(201);
  }
};
const lease = async (types: string[], limit: number, s: TestStack = stack): Promise<Leased[]> => {
  const res = await post('/jobs/next', { worker: 'w', types, limit }, s);
  expect([200, 204]).toContain(res.status);
  return res.status === 200 ? res.body.jobs : [];
};
const finished = (jobs: Leased[]) => jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' }));
const states = async () =>
  Object.fromEntries(
    (await tdb.db.pool.query<{ state: string; n: number }>('SELECT state, count(*)::int AS n FROM job GROUP BY state')).rows.map((r) => [
      r.state,
      r.n,
    ]),
  );
const running = async (type: string) =>
  Number((await tdb.db.pool.query(`SELECT count(*) AS n FROM job WHERE state = 'running' AND type = $1`, [type])).rows[0].n);

describe('POST /jobs/reports with next', () => {
  it('applies the reports and leases the next jobs in the same request', async () => {
    await createJobs(5, { type: 'pair' });
    const first = await lease(['pair'], 2);
    const res = await post('/jobs/reports', {
      reports: finished(first),
      next: { worker: 'w-next', types: ['pair'], limit: 2, lease: '1m' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results).toEqual(first.map((j) => ({ id: j.id, status: 200 })));
    expect(res.body.jobs).toHaveLength(2);
    const next = res.body.jobs as (Leased & { leaseExpiresAt: string; startedAt: string })[];
    for (const j of next) {
      expect(j).toMatchObject({ type: 'pair', worker: 'w-next', leaseToken: expect.any(String) });
      // the lease asked for lasts a minute
      expect(Date.parse(j.leaseExpiresAt) - Date.parse(j.startedAt)).toBe(60_000);
    }
    expect(new Set([...first, ...next].map((j) => j.id)).size).toBe(4);
    expect(await states()).toEqual({ finished: 2, running: 2, queued: 1 });
    // the leases are real ones: their tokens report them
    const again = await post('/jobs/reports', { reports: finished(next), next: { worker: 'w-next', types: ['pair'], limit: 5 } });
    expect(again.body.results.map((r: { status: number }) => r.status)).toEqual([200, 200]);
    expect(again.body.jobs).toHaveLength(1);
    const last = await post('/jobs/reports', { reports: finished(again.body.jobs), next: { worker: 'w-next', types: ['pair'] } });
    expect(last.body).toEqual({ results: [{ id: again.body.jobs[0].id, status: 200 }], jobs: [] }); // nothing left: none, no waiting
    expect(await states()).toEqual({ finished: 5 });
  });

  it('answers without jobs when none is asked for, as before', async () => {
    await createJobs(2, { type: 'plain' });
    const [a] = await lease(['plain'], 1);
    const res = await post('/jobs/reports', { reports: finished([a!]) });
    expect(res.body).toEqual({ results: [{ id: a!.id, status: 200 }] });
    expect(await states()).toEqual({ finished: 1, queued: 1 });
  });

  it('leases the next jobs even when a report is refused: each report is answered on its own', async () => {
    await createJobs(3, { type: 'mixed' });
    const [a, b] = await lease(['mixed'], 2);
    expect((await post(`/jobs/${b!.id}/finished`, { leaseToken: b!.leaseToken })).status).toBe(200);
    const res = await post('/jobs/reports', {
      reports: [...finished([a!]), { id: b!.id, leaseToken: b!.leaseToken, outcome: 'failed', error: 'contradicts' }],
      next: { worker: 'w', types: ['mixed'], limit: 3 },
    });
    expect(res.body.results.map((r: { status: number }) => r.status)).toEqual([200, 409]);
    expect(res.body.jobs).toHaveLength(1);
  });

  it('passes the slot of a reported job straight to the next one under a binding limit', async () => {
    expect((await request(stack.app.server).patch('/types/one').set('authorization', admin).send({ concurrency: 1 })).status).toBe(200);
    await createJobs(4, { type: 'one' });
    let [held] = await lease(['one'], 5);
    expect(held).toBeDefined();
    for (let i = 0; i < 3; i++) {
      expect(await lease(['one'], 5)).toEqual([]); // at the limit: a plain lease finds no slot
      const res = await post('/jobs/reports', { reports: finished([held!]), next: { worker: 'w', types: ['one'], limit: 5 } });
      expect(res.body.results).toEqual([{ id: held!.id, status: 200 }]);
      expect(res.body.jobs, `hand-over ${i}`).toHaveLength(1); // one slot freed, one job leased
      held = res.body.jobs[0];
      expect(await running('one')).toBe(1);
    }
    const done = await post('/jobs/reports', { reports: finished([held!]), next: { worker: 'w', types: ['one'] } });
    expect(done.body.jobs).toEqual([]);
    expect(await states()).toEqual({ finished: 4 });
    expect((await tdb.db.pool.query('SELECT count(*)::int AS n FROM flow_slot WHERE job_id IS NOT NULL')).rows[0].n).toBe(0);
  });

  it('leases nothing of a paused type, and holds a group limit too', async () => {
    const patch = (url: string, body: object) => request(stack.app.server).patch(url).set('authorization', admin).send(body);
    await createJobs(2, { type: 'p' });
    await createJobs(6, { type: 'g', group: 'customer:1' });
    const [p] = await lease(['p'], 1);
    expect((await patch('/types/p', { paused: true })).status).toBe(200);
    const paused = await post('/jobs/reports', { reports: finished([p!]), next: { worker: 'w', types: ['p'], limit: 5 } });
    expect(paused.body).toMatchObject({ results: [{ status: 200 }], jobs: [] });
    expect((await patch('/groups/customer:1', { concurrency: 2 })).status).toBe(200);
    const two = await lease(['g'], 5);
    expect(two).toHaveLength(2);
    const res = await post('/jobs/reports', {
      reports: finished(two.slice(0, 1)),
      next: { worker: 'w', groups: ['customer:1'], limit: 5 },
    });
    expect(res.body.jobs).toHaveLength(1);
    expect(await running('g')).toBe(2);
  });

  it('refuses a bad next with a 400 naming the field, and applies nothing of the request', async () => {
    await createJobs(2, { type: 'bad' });
    const [a] = await lease(['bad'], 1);
    const bad: [object, string][] = [
      [{ worker: 'w', wait: '10s' }, '/next/wait'],
      [{ worker: 'w', limit: 0 }, '/next/limit'],
      [{ worker: 'w', limit: 1001 }, '/next/limit'],
      [{ worker: 'w', colour: 'red' }, '/next/colour'],
      [{ types: ['bad'] }, '/next/worker'],
      [{ worker: 'w', types: [] }, '/next/types'],
      [{ worker: 'w', lease: '10ms' }, '/next/lease'],
      [{ worker: 'x'.repeat(201) }, '/next/worker'],
      [[], '/next'],
    ];
    for (const [next, path] of bad) {
      const res = await post('/jobs/reports', { reports: finished([a!]), next });
      expect(res.status, JSON.stringify(next)).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(
        res.body.errors.map((e: { path: string }) => e.path),
        JSON.stringify(next),
      ).toContain(path);
    }
    const wait = await post('/jobs/reports', { reports: finished([a!]), next: { worker: 'w', wait: '1s' } });
    expect(wait.body.errors[0].message).toMatch(/POST \/jobs\/next/);
    expect(await states()).toEqual({ running: 1, queued: 1 }); // the report was not applied, nothing leased
  });

  it('is refused by a reader token', async () => {
    const res = await request(stack.app.server)
      .post('/jobs/reports')
      .set('authorization', bearer('reader'))
      .send({ reports: [], next: { worker: 'w' } });
    expect(res.status).toBe(403);
  });
});

describe('a binding limit with workers that report and lease together', () => {
  it('never has more running than the limit, with 3 instances and 24 workers, and every job runs once', { timeout: 60_000 }, async () => {
    const stacks = [stack];
    for (const id of ['b', 'c']) stacks.push(await createTestStack({ db: tdb.connect(4), tokens: TOKENS, instanceId: `handover-${id}` }));
    try {
      expect((await request(stack.app.server).patch('/types/limited').set('authorization', admin).send({ concurrency: 5 })).status).toBe(
        200,
      );
      await createJobs(300, { type: 'limited' });
      const sampler = sampleMax(() => running('limited'));
      const done = new Set<string>();
      let handedOver = 0;
      const worker = async (s: TestStack, w: number) => {
        let held: Leased[] = [];
        for (let idle = 0; idle < 4;) {
          if (held.length === 0) {
            held = await lease(['limited'], 2, s);
            if (held.length === 0) {
              idle++;
              await sleep(15);
              continue;
            }
          }
          idle = 0;
          await sleep(2 + Math.random() * 6);
          const res = await post('/jobs/reports', { reports: finished(held), next: { worker: `w${w}`, types: ['limited'], limit: 2 } }, s);
          expect(res.status).toBe(200);
          for (const [i, r] of (res.body.results as { id: string; status: number }[]).entries()) {
            expect(r.status).toBe(200);
            expect(done.has(held[i]!.id)).toBe(false);
            done.add(held[i]!.id);
          }
          held = res.body.jobs;
          handedOver += held.length;
        }
      };
      await Promise.all(Array.from({ length: 24 }, (_, i) => worker(stacks[i % 3]!, i)));
      const max = await sampler.stop();
      expect(done.size).toBe(300);
      expect(handedOver, 'jobs leased through reports').toBeGreaterThan(50);
      expect(max, 'running jobs sampled').toBeLessThanOrEqual(5);
      const peak = await peakOverlapIn(tdb.db.pool, `type = 'limited'`);
      expect(peak, 'overlaps of startedAt..finishedAt').toBeLessThanOrEqual(5);
      expect(peak).toBeGreaterThanOrEqual(3);
      expect((await tdb.db.pool.query('SELECT count(*)::int AS n FROM flow_slot WHERE job_id IS NOT NULL')).rows[0].n).toBe(0);
    } finally {
      for (const s of stacks.slice(1)) await s.close();
    }
  });
});
