/** Flow control through the real server and database: pause, concurrency and rate per type and per group. */
import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.js';
import { bearer, createTestStack, type TestStack, TOKENS } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { peakOverlapIn, sampleMax } from '../support/overlap.js';
import { sleep, until } from '../support/wait.js';
import { useTestStack } from '../support/fixture.js';

const admin = bearer('admin');
let tdb: TestDatabase;
let stack: TestStack;

useTestStack({ tokens: TOKENS, poolSize: 12 }, (f) => ({ tdb, stack } = f));
beforeEach(async () => {
  for (const t of ['job', 'flow_policy', 'flow_slot', 'flow_token', 'job_event']) await tdb.db.pool.query(`DELETE FROM ${t}`);
});

const api = (s: TestStack = stack) => ({
  post: (url: string, body: object) => request(s.app.server).post(url).set('authorization', admin).send(body),
  patch: (url: string, body: object, token = admin) => request(s.app.server).patch(url).set('authorization', token).send(body),
  get: (url: string, token = admin) => request(s.app.server).get(url).set('authorization', token),
});
const createJobs = async (n: number, body: object) => {
  const jobs = Array.from({ length: n }, () => body);
  for (let i = 0; i < jobs.length; i += 1000) expect((await api().post('/jobs/batch', { jobs: jobs.slice(i, i + 1000) })).status).toBe(201);
};
const lease = async (types: string[], limit = 10, s: TestStack = stack) => {
  const res = await api(s).post('/jobs/next', { worker: 'w', types, limit });
  expect([200, 204]).toContain(res.status);
  return (res.status === 200 ? res.body.jobs : []) as { id: string; leaseToken: string; group: string }[];
};
const finish = (j: { id: string; leaseToken: string }, s: TestStack = stack) =>
  api(s).post(`/jobs/${j.id}/finished`, { leaseToken: j.leaseToken });
const running = async (where = 'true') =>
  Number((await tdb.db.pool.query(`SELECT count(*) AS n FROM job WHERE state = 'running' AND ${where}`)).rows[0].n);

describe('PATCH /types and /groups', () => {
  it('sets and clears a policy, shown with the counts of open jobs', async () => {
    await createJobs(3, { type: 'mail.send' });
    await createJobs(1, { type: 'mail.send', runAt: '2099-01-01T00:00:00.000Z' });
    const res = await api().patch('/types/mail.send', { concurrency: 5, rate: '100/1m' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      type: 'mail.send',
      paused: false,
      concurrency: 5,
      rate: '100/1m',
      counts: { queued: 3, scheduled: 1, running: 0 },
    });
    expect(res.body.oldestQueuedAt).not.toBeNull();
    expect((await api().patch('/groups/customer:42', { paused: true })).body).toMatchObject({
      group: 'customer:42',
      paused: true,
      counts: { queued: 0 },
    });
    const types = await api().get('/types', bearer('reader'));
    expect(types.body.items.map((t: { type: string }) => t.type)).toEqual(['mail.send']);
    const groups = await api().get('/groups');
    expect(groups.body.items.map((g: { group: string }) => g.group)).toEqual(['customer:42', 'default']);
    const cleared = await api().patch('/types/mail.send', { concurrency: null, rate: null });
    expect(cleared.body).toMatchObject({ concurrency: null, rate: null, paused: false });
    expect((await tdb.db.pool.query(`SELECT count(*)::int AS n FROM flow_policy WHERE kind = 'type'`)).rows[0].n).toBe(0);
    expect((await api().get('/types/never.seen')).body).toMatchObject({ type: 'never.seen', concurrency: null, counts: { queued: 0 } });
  });

  it('refuses bad input with a 400 naming the field, and a PATCH by anyone but admin with 403', async () => {
    const bad: [object, string][] = [
      [{ concurrency: 0 }, '/concurrency'],
      [{ concurrency: 1.5 }, '/concurrency'],
      [{ rate: 'fast' }, '/rate'],
      [{ rate: '0/1m' }, '/rate'],
      [{ rate: '10/soon' }, '/rate'],
      [{ paused: 'yes' }, '/paused'],
      [{ limit: 3 }, '/limit'],
    ];
    for (const [body, path] of bad) {
      const res = await api().patch('/types/t', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.errors[0].path).toBe(path);
    }
    expect((await api().patch(`/types/${'x'.repeat(201)}`, { paused: true })).status).toBe(400);
    for (const role of ['reader', 'worker', 'producer'] as const)
      expect((await api().patch('/types/t', { paused: true }, bearer(role))).status).toBe(403);
    expect((await tdb.db.pool.query('SELECT count(*)::int AS n FROM flow_policy')).rows[0].n).toBe(0);
  });
});

describe('pause', () => {
  it('keeps queued jobs queued, lets running ones finish, and a resume wakes a waiting long-poll at once', async () => {
    await createJobs(2, { type: 'video.encode' });
    const [first] = await lease(['video.encode'], 1);
    await api().patch('/types/video.encode', { paused: true });
    expect(await lease(['video.encode'])).toEqual([]);
    expect((await finish(first!)).status).toBe(200);
    const waiting = api()
      .post('/jobs/next', { worker: 'w', types: ['video.encode'], wait: '10s' })
      .then((r) => r); // sent now, not when awaited
    await until(() => stack.services.workers.waiters.size === 1, 'the long-poll waiting');
    const t0 = Date.now();
    await api().patch('/types/video.encode', { paused: false });
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(2_000);
  });

  it('pauses a group across types, and other groups flow', async () => {
    await createJobs(2, { type: 'a', group: 'customer:1' });
    await createJobs(2, { type: 'a', group: 'customer:2' });
    await api().patch('/groups/customer:1', { paused: true });
    const got = await lease(['a'], 10);
    expect(got.map((j) => j.group)).toEqual(['customer:2', 'customer:2']);
  });
});

describe('concurrency', () => {
  it.each([
    { on: 'a type', policy: '/types/limited', job: { type: 'limited' }, where: `type = 'limited'` },
    { on: 'a group', policy: '/groups/customer:42', job: { type: 'grouped', group: 'customer:42' }, where: `group_ = 'customer:42'` },
  ])('never has more running than the limit on $on, with 3 instances and 24 workers leasing at once', { timeout: 60_000 }, async (c) => {
    const stacks = [stack];
    for (const id of ['b', 'c']) stacks.push(await createTestStack({ db: tdb.connect(4), tokens: TOKENS, instanceId: `flow-${id}` }));
    const where = c.where;
    try {
      await api().patch(c.policy, { concurrency: 5 });
      await createJobs(240, c.job);
      const sampler = sampleMax(() => running(where));
      const done = new Set<string>();
      const worker = async (s: TestStack) => {
        for (let idle = 0; idle < 3;) {
          const jobs = await lease([c.job.type], 3, s);
          if (jobs.length === 0) {
            idle++;
            await sleep(20);
            continue;
          }
          idle = 0;
          await sleep(2 + Math.random() * 8);
          for (const j of jobs) {
            expect((await finish(j, s)).status).toBe(200);
            expect(done.has(j.id)).toBe(false);
            done.add(j.id);
          }
        }
      };
      await Promise.all(Array.from({ length: 24 }, (_, i) => worker(stacks[i % 3]!)));
      const max = await sampler.stop();
      expect(done.size).toBe(240);
      expect(max, 'running jobs sampled').toBeLessThanOrEqual(5);
      expect(max).toBeGreaterThanOrEqual(2); // the limit was reached for real, not starved
      // from the jobs' own times: no instant had more than 5 running
      expect(await peakOverlapIn(tdb.db.pool, where), 'overlaps of startedAt..finishedAt').toBeLessThanOrEqual(5);
      expect(await tdb.db.pool.query('SELECT count(*)::int AS n FROM flow_slot WHERE job_id IS NOT NULL').then((r) => r.rows[0].n)).toBe(0);
    } finally {
      for (const s of stacks.slice(1)) await s.close();
    }
  });

  it('holds a type limit and a group limit at once', async () => {
    await api().patch('/types/both', { concurrency: 4 });
    await api().patch('/groups/g1', { concurrency: 2 });
    await createJobs(5, { type: 'both', group: 'g1' });
    await createJobs(5, { type: 'both', group: 'g2' });
    const got = await lease(['both'], 10);
    expect(got).toHaveLength(4);
    expect(got.filter((j) => j.group === 'g1')).toHaveLength(2);
    expect(await lease(['both'], 10)).toEqual([]);
  });

  it('gives a slot back on every way out of running: finish, failure, expiry, cancel', async () => {
    const clock = new ManualClock('2026-11-20T09:00:00.000Z');
    const own = await createTestStack({ db: tdb.connect(4), clock, tokens: TOKENS, instanceId: 'flow-clock' });
    try {
      const o = api(own);
      await o.patch('/types/one', { concurrency: 1 });
      for (let i = 0; i < 5; i++) await o.post('/jobs', { type: 'one', maxAttempts: 5 });
      const next = async () => {
        const got = await lease(['one'], 5, own);
        expect(got).toHaveLength(1);
        expect(await lease(['one'], 5, own)).toEqual([]); // at the limit
        return got[0]!;
      };
      expect((await finish(await next(), own)).status).toBe(200);
      const f = await next();
      expect((await o.post(`/jobs/${f.id}/failed`, { leaseToken: f.leaseToken, error: 'x', retryIn: '1h' })).status).toBe(200);
      const c = await next();
      expect((await o.post(`/jobs/${c.id}/cancel`, {})).status).toBe(200);
      await o.post('/jobs/next', { worker: 'w', types: ['one'], lease: '1s' });
      clock.advance(2_000);
      await new LeaseReaper(own.ctx).tick(clock.now()); // the lease expired: queued again, slot free
      await next();
    } finally {
      await own.close();
    }
  });

  it('frees a cancelled job’s slot once: its retry and its deletion later free no one else’s', async () => {
    await api().patch('/types/once', { concurrency: 1 });
    await createJobs(2, { type: 'once' });
    const [a] = await lease(['once'], 2);
    expect((await api().post(`/jobs/${a!.id}/cancel`, {})).status).toBe(200);
    const [b] = await lease(['once'], 2); // a's slot, now b's
    expect(b!.id).not.toBe(a!.id);
    const holder = async () =>
      (await tdb.db.pool.query(`SELECT job_id::text AS id FROM flow_slot WHERE kind = 'type' AND name = 'once' AND job_id IS NOT NULL`))
        .rows;
    expect(await holder()).toEqual([{ id: String(b!.id) }]);
    expect((await api().post(`/jobs/${a!.id}/retry`, {})).status).toBe(200); // a changes state again
    expect(await holder()).toEqual([{ id: String(b!.id) }]);
    expect(await lease(['once'], 2)).toEqual([]); // b still holds the only slot
    await tdb.db.pool.query('DELETE FROM job WHERE id = $1', [a!.id]);
    expect(await holder()).toEqual([{ id: String(b!.id) }]);
    expect(await lease(['once'], 2)).toEqual([]);
  });

  it('gives the slots of a running job deleted by hand back', async () => {
    await api().patch('/types/deleted', { concurrency: 1 });
    await api().patch('/groups/gd', { concurrency: 1 });
    await createJobs(2, { type: 'deleted', group: 'gd' });
    const [held] = await lease(['deleted'], 2);
    expect(await lease(['deleted'], 2)).toEqual([]);
    await tdb.db.pool.query('DELETE FROM job WHERE id = $1', [held!.id]);
    expect(await lease(['deleted'], 2)).toHaveLength(1);
    expect((await tdb.db.pool.query('SELECT count(*)::int AS n FROM flow_slot WHERE job_id IS NOT NULL')).rows[0].n).toBe(2);
  });

  it('survives a restart: the limit is in the database', async () => {
    await api().patch('/types/kept', { concurrency: 1 });
    await createJobs(3, { type: 'kept' });
    const fresh = await createTestStack({ db: tdb.connect(4), tokens: TOKENS, instanceId: 'flow-restarted' });
    try {
      expect(await lease(['kept'], 3, fresh)).toHaveLength(1);
      expect(await lease(['kept'], 3, fresh)).toEqual([]);
    } finally {
      await fresh.close();
    }
  });
});

describe('rate', () => {
  it('lets at most n leases begin in any window of its length (a sliding window)', async () => {
    const clock = new ManualClock('2026-11-20T09:00:00.000Z');
    const own = await createTestStack({ db: tdb.connect(4), clock, tokens: TOKENS, instanceId: 'flow-rate' });
    try {
      await api(own).patch('/groups/customer:42', { rate: '3/1m' });
      await createJobs(10, { type: 'r', group: 'customer:42', runAt: '2026-11-01T00:00:00.000Z' });
      const take = async () => (await lease(['r'], 10, own)).length;
      expect(await take()).toBe(3);
      clock.advance(30_000);
      expect(await take()).toBe(0);
      clock.advance(29_999);
      expect(await take()).toBe(0); // 59.999 s after the three began
      clock.advance(1);
      expect(await take()).toBe(3); // a whole minute after them
      clock.advance(60_000);
      expect(await take()).toBe(3);
      expect(await take()).toBe(0);
    } finally {
      await own.close();
    }
  });
});

describe('a long-poll under a rate limit', () => {
  it('is woken when a token frees, at the end of the window', async () => {
    await api().patch('/types/paced', { rate: '1/1s' });
    await createJobs(2, { type: 'paced' });
    expect(await lease(['paced'])).toHaveLength(1);
    const t0 = Date.now();
    const res = await api().post('/jobs/next', { worker: 'w', types: ['paced'], wait: '10s' }); // waits for the token
    expect(res.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(2_500);
  });
});

describe('GET /jobs/{id}/explain', () => {
  it('says why a job waits, in codes and words, for every reason', async () => {
    const explain = async (id: string) => {
      const res = await api().get(`/jobs/${id}/explain`, bearer('reader'));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body as { runnable: boolean; state: string; reasons: { code: string; detail: string }[] };
    };
    const codes = async (id: string) => (await explain(id)).reasons.map((r) => r.code);
    const job = async (body: object) => (await api().post('/jobs', body)).body.id as string;

    const later = await job({ type: 'x.sched', runAt: '2099-01-01T00:00:00.000Z' });
    expect(await codes(later)).toEqual(['scheduled']);
    const first = await job({ type: 'x.ready' });
    const second = await job({ type: 'x.ready' });
    const e = await explain(second);
    expect(e).toMatchObject({ runnable: true, state: 'queued', reasons: [{ code: 'waiting-for-worker' }] });
    expect(e.reasons[0]!.detail).toMatch(/^It is runnable\. 1 runnable job comes before it/);
    void first;

    const flaky = await job({ type: 'x.retry', maxAttempts: 3 });
    const [l] = await lease(['x.retry'], 1);
    await api().post(`/jobs/${flaky}/failed`, { leaseToken: l!.leaseToken, error: 'x', retryIn: '1h' });
    expect(await codes(flaky)).toEqual(['retry-backoff']);

    await api().patch('/types/x.paused', { paused: true });
    await api().patch('/groups/gp', { paused: true });
    expect(await codes(await job({ type: 'x.paused', group: 'gp' }))).toEqual(['type-paused', 'group-paused']);

    await api().patch('/types/x.conc', { concurrency: 1 });
    await api().patch('/groups/gc', { concurrency: 1 });
    await job({ type: 'x.conc', group: 'gc' });
    const blocked = await job({ type: 'x.conc', group: 'gc' });
    const [held] = await lease(['x.conc'], 1);
    const c = await explain(blocked);
    expect(c.reasons.map((r) => r.code)).toEqual(['type-at-concurrency', 'group-at-concurrency']);
    expect(c.reasons[0]!.detail).toMatch(/1 of 1 running/);
    expect(await codes(held!.id)).toEqual(['running']);

    await api().patch('/types/x.rate', { rate: '1/1h' });
    await api().patch('/groups/gr', { rate: '1/1h' });
    await job({ type: 'x.rate', group: 'gr' });
    const slow = await job({ type: 'x.rate', group: 'gr' });
    await lease(['x.rate'], 1);
    expect(await codes(slow)).toEqual(['type-rate-limited', 'group-rate-limited']);

    await finish(held!);
    expect(await codes(held!.id)).toEqual(['final']);
    expect((await api().get('/jobs/999999/explain')).status).toBe(404);
  });
});
