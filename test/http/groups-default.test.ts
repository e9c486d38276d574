/** GET|PATCH /groups-default: a concurrency limit for every group nobody declared, enforced by the lease. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { type JobsApi, sleep, threeInstances } from './jobs-support.js';

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
  await a.patch('/groups-default', { concurrency: null });
});

const batch = async (jobs: Record<string, unknown>[]) => {
  const res = await a.post('/jobs/batch', { jobs });
  expect(res.status).toBe(201);
  return res.body.jobs as { id: string }[];
};
const permits = async () => (await tdb.db.pool.query(`SELECT count(*)::int AS n FROM flow_slot WHERE kind = 'default-group'`)).rows[0].n;

describe('GET|PATCH /groups-default', () => {
  it('shows and changes the default; bad input is a 400 naming the field, changing nothing', async () => {
    expect((await a.get('/groups-default')).body).toEqual({ concurrency: null, groupsRunning: 0, permits: 0 });
    const res = await a.patch('/groups-default', { concurrency: 2 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ concurrency: 2 });
    for (const [body, field] of [
      [{ concurrency: 0 }, 'concurrency'],
      [{ concurrency: 1.5 }, 'concurrency'],
      [{ rate: '1/1s' }, 'rate'],
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
    expect((await a.get('/groups-default')).body).toEqual({ concurrency: 2, groupsRunning: 1, permits: 2 });
    const waiting = (await a.get(`/jobs/${g[2]!.id}/explain`)).body;
    expect(waiting).toMatchObject({ runnable: false, reasons: [{ code: 'group-at-concurrency' }] });
    expect(waiting.reasons[0].detail).toContain('2 of 2 running');
    // one ends: the group's next job in order may begin, on any instance
    const first = leased.find((j) => j.id === g[0]!.id)!;
    await instances[1]!.post(`/jobs/${first.id}/finished`, { leaseToken: first.leaseToken });
    expect((await instances[2]!.lease({ worker: 'w', limit: 20, groups: ['g'] })).map((j) => j.id)).toEqual([g[2]!.id]);
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
    // permits: at most one per group, all free now; the reaper deletes them once idle for a minute
    expect(await permits()).toBeLessThanOrEqual(12);
    const reaper = new LeaseReaper(a.stack.ctx);
    expect((await reaper.tick(new Date())).reclaimed).toBe(0);
    expect((await reaper.tick(new Date(Date.now() + 61_000))).reclaimed).toBeGreaterThan(0);
    expect(await permits()).toBe(0);
  });
});
