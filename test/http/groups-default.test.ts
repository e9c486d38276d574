/** GET|PATCH /groups-default: a concurrency limit and a rate for every group nobody declared, enforced by the lease. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import type { PreparedExecutor } from '../../src/db/executor.js';
import { jobLease, jobReport } from '../../src/repositories/jobs.js';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { type JobsApi, jobsApi, sleep, threeInstances } from './jobs-support.js';

let tdb: TestDatabase;
let instances: JobsApi[];
let a: JobsApi;

beforeAll(async () => {
  tdb = await createTestDatabase();
  instances = await threeInstances(tdb);
  a = instances[0]!;
});
afterAll(async () => {
  for (const api of instances ?? []) await api?.stack.close();
  await tdb?.destroy();
});
beforeEach(async () => {
  await tdb.db.pool.query('DELETE FROM job');
  await tdb.db.pool.query('DELETE FROM flow_policy');
  await tdb.db.pool.query('DELETE FROM flow_slot');
  await tdb.db.pool.query('DELETE FROM flow_token');
  await a.patch('/groups-default', { concurrency: null, rate: null });
});

const batch = async (jobs: Record<string, unknown>[], api = a) => {
  const res = await api.post('/jobs/batch', { jobs });
  expect(res.status).toBe(201);
  return res.body.jobs as { id: string }[];
};
const permits = async () => (await tdb.db.pool.query(`SELECT count(*)::int AS n FROM flow_slot WHERE kind = 'default-group'`)).rows[0].n;

describe('GET|PATCH /groups-default', () => {
  it('shows and changes the default; bad input is a 400 naming the field, changing nothing', async () => {
    expect((await a.get('/groups-default')).body).toEqual({ concurrency: null, rate: null, groupsRunning: 0, permits: 0, tokens: 0 });
    const res = await a.patch('/groups-default', { concurrency: 2 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ concurrency: 2 });
    for (const [body, field] of [
      [{ concurrency: 0 }, 'concurrency'],
      [{ concurrency: 1.5 }, 'concurrency'],
      [{ rate: '1/0s' }, 'rate'],
      [{ colour: 1 }, 'colour'],
    ] as const) {
      const bad = await a.patch('/groups-default', body);
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain(field);
    }
    expect((await a.get('/groups-default')).body).toMatchObject({ concurrency: 2 });
  });

  it('without a default, a group is unlimited', async () => {
    await batch(Array.from({ length: 5 }, () => ({ type: 't', group: 'g' })));
    expect(await a.lease({ worker: 'w', limit: 5 })).toHaveLength(5);
    expect(await permits()).toBe(0);
  });

  it('limits each undeclared group to the default, in order, but not a group with a policy of its own', async () => {
    await a.patch('/groups-default', { concurrency: 2 });
    await a.patch('/groups/vip', { concurrency: 3 });
    const g = await batch(Array.from({ length: 4 }, () => ({ type: 't', group: 'g' })));
    await batch(Array.from({ length: 4 }, () => ({ type: 't', group: 'vip' })));
    const leased = await a.lease({ worker: 'w', limit: 20 });
    const byGroup = (name: string) => leased.filter((j) => j.group === name).map((j) => j.id);
    expect(byGroup('g')).toEqual([g[0]!.id, g[1]!.id]);
    expect(byGroup('vip')).toHaveLength(3);
    expect((await a.get('/groups-default')).body).toEqual({ concurrency: 2, rate: null, groupsRunning: 1, permits: 2, tokens: 0 });
    const waiting = (await a.get(`/jobs/${g[2]!.id}/explain`)).body;
    expect(waiting).toMatchObject({ runnable: false, reasons: [{ code: 'group-at-concurrency' }] });
    expect(waiting.reasons[0].detail).toContain('2 of 2 running');
    // one ends: the group's next job in order may begin, on any instance
    const first = leased.find((j) => j.id === g[0]!.id)!;
    await instances[1]!.post(`/jobs/${first.id}/finished`, { leaseToken: first.leaseToken });
    expect((await instances[2]!.lease({ worker: 'w', limit: 20, groups: ['g'] })).map((j) => j.id)).toEqual([g[2]!.id]);
  });

  it("counts a group's running jobs, whichever of them ended; writes no row but the jobs", async () => {
    await a.patch('/groups-default', { concurrency: 2 });
    const g = await batch(Array.from({ length: 4 }, () => ({ type: 't', group: 'g' })));
    const leased = await a.lease({ worker: 'w', limit: 20 });
    expect(leased.map((j) => j.id)).toEqual([g[0]!.id, g[1]!.id]);
    // the second ends, the first runs on: one place is free
    const second = leased[1]!;
    expect((await a.post(`/jobs/${second.id}/finished`, { leaseToken: second.leaseToken })).status).toBe(200);
    expect((await instances[1]!.lease({ worker: 'w', limit: 20 })).map((j) => j.id)).toEqual([g[2]!.id]);
    const marked = await tdb.db.pool.query<{ id: string; state: string }>(
      `SELECT id::text, state FROM job WHERE group_default ORDER BY id`,
    );
    expect(marked.rows).toEqual([
      { id: g[0]!.id, state: 'running' },
      { id: g[1]!.id, state: 'finished' },
      { id: g[2]!.id, state: 'running' },
    ]);
    expect(await permits()).toBe(0);
    expect((await a.get('/groups-default')).body).toMatchObject({ groupsRunning: 1, permits: 2 });
  });

  it('passes over a group with every place taken to the next one, also at a lower priority', async () => {
    await a.patch('/groups-default', { concurrency: 1 });
    const [first] = await batch([
      { type: 't', group: 'busy', priority: 5 },
      { type: 't', group: 'busy', priority: 5 },
    ]);
    const [low] = await batch([{ type: 't', group: 'idle', priority: 0 }]);
    expect((await a.lease({ worker: 'w', limit: 1 })).map((j) => j.id)).toEqual([first!.id]);
    // the busy group's next job comes first by priority, but its group has no place: the lanes
    // leave the group out and walk on to the lower priority
    expect((await instances[1]!.lease({ worker: 'w', limit: 5 })).map((j) => j.id)).toEqual([low!.id]);
  });

  it.each([
    ['the slim claim', false],
    ['the full statement (a group declared a policy)', true],
  ])('a lease that has not committed keeps its group: another never begins a job of it, not even one ahead (%s)', async (_, full) => {
    await a.patch('/groups-default', { concurrency: 1 });
    if (full) await a.patch('/groups/other', { concurrency: 5 });
    const [later] = await batch([{ type: 't', group: 'g' }]);
    const client = await tdb.db.pool.connect();
    try {
      // a lease in flight: it took the group's first job and has not committed
      await client.query('BEGIN');
      const inFlight: PreparedExecutor = {
        inTransaction: true,
        prepared: async <R>(st: { name: string; text: string; values: readonly unknown[] }) =>
          (await client.query({ name: st.name, text: st.text, values: [...st.values] })).rows as R[],
      };
      const first = await jobLease(inFlight, { now: new Date(), slots: [{ worker: 'w0', leaseMs: 60_000 }] });
      expect(first.leased.map((j) => j.id)).toEqual([later!.id]);
      // meanwhile a job that comes before it in the group's order: no lease's snapshot shows the
      // first one running yet, so only the group's lock keeps a second from beginning
      const [ahead] = await batch([{ type: 't', group: 'g', priority: 5 }]);
      expect(await instances[1]!.lease({ worker: 'w1', limit: 5 })).toEqual([]);
      await client.query('COMMIT');
      expect(await instances[2]!.lease({ worker: 'w2', limit: 5 })).toEqual([]);
      const running = first.leased[0]!;
      expect((await a.post(`/jobs/${running.id}/finished`, { leaseToken: running.leaseToken })).status).toBe(200);
      expect((await instances[1]!.lease({ worker: 'w1', limit: 5 })).map((j) => j.id)).toEqual([ahead!.id]);
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  });

  it("starts a group's next job not before its last one ended, though the lease's clock is behind", async () => {
    await a.patch('/groups-default', { concurrency: 1 });
    const [j1, j2] = await batch([
      { type: 't', group: 'g' },
      { type: 't', group: 'g' },
    ]);
    const t0 = Date.now();
    const lease = (now: Date) => jobLease(tdb.db, { now, slots: [{ worker: 'w', leaseMs: 60_000 }] });
    const first = (await lease(new Date(t0))).leased[0]!;
    expect(first.id).toBe(j1!.id);
    // reported by an instance whose clock is 5 s ahead; the next lease comes from one at t0 + 1 s
    const ended = new Date(t0 + 5_000);
    const [r] = await jobReport(tdb.db, [{ id: first.id, leaseToken: first.leaseToken, outcome: 'finished', jitter: 1 }], ended);
    expect(r!.verdict).toBe('applied');
    const next = (await lease(new Date(t0 + 1_000))).leased[0]!;
    expect(next.id).toBe(j2!.id);
    expect(next.startedAt).toEqual(ended);
    expect(next.leaseExpiresAt).toEqual(new Date(ended.getTime() + 60_000));
  });

  it('sequences: 3 instances and 24 workers never run two jobs of one group at once, each group in order', async () => {
    await instances[1]!.patch('/groups-default', { concurrency: 1 });
    const groups = Array.from({ length: 12 }, (_, k) => `customer:${k}`);
    // created interleaved, in three batches
    for (let round = 0; round < 3; round++) {
      await batch(groups.flatMap((group) => Array.from({ length: 3 }, (_, i) => ({ type: 'seq', group, args: { round, i } }))));
    }
    const total = 12 * 9;
    let done = 0;
    const worker = async (api: JobsApi, name: string) => {
      while (done < total) {
        const jobs = await api.lease({ worker: name, types: ['seq'], wait: '200ms', limit: 1 });
        for (const j of jobs) {
          await sleep(3 + Math.floor(Math.random() * 10));
          const res = await api.post(`/jobs/${j.id}/finished`, { leaseToken: j.leaseToken });
          expect(res.status).toBe(200);
          done++;
        }
      }
    };
    await Promise.all(Array.from({ length: 24 }, (_, w) => worker(instances[w % 3]!, `w${w}`)));
    const rows = (
      await tdb.db.pool.query(
        `SELECT id::bigint AS id, group_, state, started_at, finished_at FROM job WHERE type = 'seq' ORDER BY group_, started_at, id`,
      )
    ).rows as { id: string; group_: string; state: string; started_at: Date; finished_at: Date }[];
    expect(rows.every((r) => r.state === 'finished')).toBe(true);
    let sideBySide = 0;
    for (const group of groups) {
      const runs = rows.filter((r) => r.group_ === group);
      expect(runs).toHaveLength(9);
      // in creation order, and each begins only after the one before ended
      expect(runs.map((r) => Number(r.id))).toEqual(runs.map((r) => Number(r.id)).sort((x, y) => x - y));
      for (let i = 1; i < runs.length; i++)
        expect(runs[i]!.started_at.getTime()).toBeGreaterThanOrEqual(runs[i - 1]!.finished_at.getTime());
      // other groups' jobs ran meanwhile
      sideBySide += rows.filter(
        (r) => r.group_ !== group && r.started_at < runs[0]!.finished_at && r.finished_at > runs[0]!.started_at,
      ).length;
    }
    expect(sideBySide).toBeGreaterThan(0);
    // no row was kept for a group: the jobs were counted
    expect(await permits()).toBe(0);
    expect((await a.get('/groups-default')).body).toMatchObject({ groupsRunning: 0, permits: 0 });
  });
});

const jobsOf = (type: string, group: string, n: number) => Array.from({ length: n }, (_, i) => ({ type, group, args: { i } }));
const tokens = async () => (await tdb.db.pool.query(`SELECT count(*)::int AS n FROM flow_token WHERE kind = 'default-group'`)).rows[0].n;

interface Run {
  group_: string;
  started_at: Date;
  finished_at: Date;
}
const runsOf = async (type: string) =>
  (await tdb.db.pool.query(`SELECT group_, started_at, finished_at, state FROM job WHERE type = $1 ORDER BY group_, started_at`, [type]))
    .rows as (Run & { state: string })[];

/** The least time between a start and the n-th start after it, in a group: at least the window when no window holds more than n. */
function tightest(runs: Run[], n: number): number {
  let least = Infinity;
  for (let i = 0; i + n < runs.length; i++) least = Math.min(least, runs[i + n]!.started_at.getTime() - runs[i]!.started_at.getTime());
  return least;
}

/** Workers on every instance lease one job at a time until `total` are done. */
async function work(type: string, total: number, workers: number, busyMs: number) {
  let done = 0;
  const worker = async (api: JobsApi, name: string) => {
    while (done < total) {
      const jobs = await api.lease({ worker: name, types: [type], wait: '100ms', limit: 1 });
      for (const j of jobs) {
        await sleep(busyMs);
        const res = await api.post(`/jobs/${j.id}/finished`, { leaseToken: j.leaseToken });
        expect(res.status).toBe(200);
        done++;
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(instances[w % 3]!, `w${w}`)));
}

describe('PATCH /groups-default {rate}', () => {
  it('shows and changes the rate; bad input is a 400 naming the field, changing nothing', async () => {
    expect((await a.get('/groups-default')).body).toEqual({ concurrency: null, rate: null, groupsRunning: 0, permits: 0, tokens: 0 });
    const res = await a.patch('/groups-default', { rate: '10/1s' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ concurrency: null, rate: '10/1s' });
    expect((await a.patch('/groups-default', { concurrency: 2 })).body).toMatchObject({ concurrency: 2, rate: '10/1s' });
    for (const rate of ['fast', '0/1s', '10/soon', 5, '10/0s']) {
      const bad = await a.patch('/groups-default', { rate });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain('rate');
    }
    expect((await a.get('/groups-default')).body).toMatchObject({ concurrency: 2, rate: '10/1s' });
    // null removes one limit and keeps the other; with neither, no default is left
    expect((await a.patch('/groups-default', { rate: null })).body).toMatchObject({ concurrency: 2, rate: null });
    expect((await a.patch('/groups-default', { rate: '1/1m', concurrency: null })).body).toMatchObject({ concurrency: null, rate: '1/1m' });
    await a.patch('/groups-default', { rate: null });
    expect((await tdb.db.pool.query('SELECT count(*)::int AS n FROM flow_default')).rows[0].n).toBe(0);
  });

  it('limits each undeclared group to n per window, but not a group with a policy of its own; explain names it; null removes it', async () => {
    await a.patch('/groups-default', { rate: '2/1h' });
    await a.patch('/groups/vip', { concurrency: 10 });
    const g = await batch(jobsOf('t', 'g', 4));
    await batch([...jobsOf('t', 'h', 4), ...jobsOf('t', 'vip', 4)]);
    const leased = await a.lease({ worker: 'w', limit: 20 });
    const count = (group: string) => leased.filter((j) => j.group === group).length;
    expect([count('g'), count('h'), count('vip')]).toEqual([2, 2, 4]);
    // finishing them frees no token: the rate counts starts, not running jobs
    for (const j of leased) await instances[1]!.post(`/jobs/${j.id}/finished`, { leaseToken: j.leaseToken });
    expect(await instances[2]!.lease({ worker: 'w', limit: 20 })).toEqual([]);
    expect((await a.get('/groups-default')).body).toEqual({ concurrency: null, rate: '2/1h', groupsRunning: 0, permits: 0, tokens: 4 });
    const waiting = (await a.get(`/jobs/${g[2]!.id}/explain`)).body;
    expect(waiting).toMatchObject({ runnable: false, reasons: [{ code: 'group-rate-limited' }] });
    expect(waiting.reasons[0].detail).toContain('/groups-default');
    expect(waiting.reasons[0].detail).toContain('2/1h');
    // a group that declares a policy of its own leaves the default
    await a.patch('/groups/g', { concurrency: 5 });
    expect((await a.lease({ worker: 'w', limit: 20 })).map((j) => j.group)).toEqual(['g', 'g']);
    await a.patch('/groups-default', { rate: null });
    expect((await a.lease({ worker: 'w', limit: 20 })).map((j) => j.group)).toEqual(['h', 'h']);
  });

  it('gives a token back a window after it was used; the reaper deletes tokens out of every window', async () => {
    const clock = new ManualClock('2026-11-20T09:00:00.000Z');
    const own = await jobsApi({ db: tdb.connect(), clock, instanceId: 'rate-clock' });
    try {
      await own.patch('/groups-default', { rate: '1/1m' });
      await batch(jobsOf('t', 'g', 3), own);
      expect(await own.lease({ worker: 'w', limit: 5 })).toHaveLength(1);
      clock.advance(59_999);
      expect(await own.lease({ worker: 'w', limit: 5 })).toHaveLength(0);
      clock.advance(1);
      expect(await own.lease({ worker: 'w', limit: 5 })).toHaveLength(1);
      expect(await tokens()).toBe(1);
      const reaper = new LeaseReaper(own.stack.ctx);
      // kept a minute past its window (instances' clocks may differ), then deleted
      expect((await reaper.tick(new Date(clock.now().getTime() + 60_000 + 59_000))).reclaimed).toBe(0);
      expect((await reaper.tick(new Date(clock.now().getTime() + 60_000 + 61_000))).reclaimed).toBe(1);
      expect(await tokens()).toBe(0);
    } finally {
      await own.stack.close();
    }
  });

  it('wakes a long-poll when a token of a group out of them leaves its window', async () => {
    await a.patch('/groups-default', { rate: '1/1s' });
    await batch(jobsOf('paced', 'g', 2));
    expect(await a.lease({ worker: 'w', types: ['paced'] })).toHaveLength(1);
    const t0 = Date.now();
    // waits for the token on another instance: no notification comes, only the timer
    const res = await instances[1]!.post('/jobs/next', { worker: 'w', types: ['paced'], wait: '10s' });
    expect(res.status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500);
    expect(Date.now() - t0).toBeLessThan(2_500);
  });

  it('3 instances and 24 workers never begin more than n jobs of one group in any window, groups side by side', async () => {
    await instances[1]!.patch('/groups-default', { rate: '2/250ms' });
    await instances[2]!.patch('/groups/vip', { concurrency: 24 });
    const groups = Array.from({ length: 6 }, (_, k) => `customer:${k}`);
    await batch([...groups.flatMap((group) => jobsOf('paced', group, 8)), ...jobsOf('paced', 'vip', 24)]);
    const started = Date.now();
    await work('paced', 6 * 8 + 24, 24, 2);
    const rows = await runsOf('paced');
    expect(rows.every((r) => r.state === 'finished')).toBe(true);
    for (const group of groups) {
      const runs = rows.filter((r) => r.group_ === group);
      expect(runs).toHaveLength(8);
      expect(tightest(runs, 2)).toBeGreaterThanOrEqual(250);
    }
    // the declared group is not paced: more than 2 of its jobs began within one window
    expect(
      tightest(
        rows.filter((r) => r.group_ === 'vip'),
        2,
      ),
    ).toBeLessThan(250);
    // every group needed 4 windows; side by side, all of them took far less than 6 × 4
    expect(Date.now() - started).toBeLessThan(6 * 4 * 250);
  });

  it('works together with the default concurrency: one at a time, and at most n begin per window', async () => {
    await a.patch('/groups-default', { concurrency: 1, rate: '2/400ms' });
    const groups = Array.from({ length: 4 }, (_, k) => `account:${k}`);
    await batch(groups.flatMap((group) => jobsOf('both', group, 6)));
    await work('both', 4 * 6, 12, 3);
    const rows = await runsOf('both');
    for (const group of groups) {
      const runs = rows.filter((r) => r.group_ === group);
      expect(runs).toHaveLength(6);
      for (let i = 1; i < runs.length; i++)
        expect(runs[i]!.started_at.getTime()).toBeGreaterThanOrEqual(runs[i - 1]!.finished_at.getTime());
      // the rate counts lease moments; a start may wait a few ms more for the previous job's report
      expect(tightest(runs, 2)).toBeGreaterThanOrEqual(400 - 50);
    }
  });
});
