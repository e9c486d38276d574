/** Fairness between groups through the real server and database: groups of equal priority take turns; priority wins. */
import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { bearer, type TestStack, TOKENS } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { useTestStack } from '../support/fixture.js';

const admin = bearer('admin');
let tdb: TestDatabase;
let stack: TestStack;

useTestStack({ tokens: TOKENS }, (f) => ({ tdb, stack } = f));
beforeEach(async () => {
  for (const t of ['job', 'flow_policy', 'flow_slot', 'flow_token', 'job_event']) await tdb.db.pool.query(`DELETE FROM ${t}`);
});

interface Leased {
  id: string;
  group: string;
  priority: number;
  runAt: string;
}

const lease = async (body: object = {}): Promise<Leased[]> => {
  const res = await request(stack.app.server)
    .post('/jobs/next')
    .set('authorization', admin)
    .send({ worker: 'w', limit: 10, ...body });
  expect([200, 204], JSON.stringify(res.body)).toContain(res.status);
  return res.status === 200 ? (res.body.jobs as Leased[]) : [];
};

/** n queued jobs of a group, created by SQL in one statement (runAt spread over the past hour, oldest first). */
const backlog = async (group: string, n: number, opts: { type?: string; priority?: number; ageMs?: number } = {}) => {
  await tdb.db.pool.query(
    `INSERT INTO job (type, group_, args, priority, run_at, max_attempts, created_at, updated_at)
     SELECT $1, $2, '{}', $3, now() - ($5::bigint - g) * interval '1 millisecond', 3, now(), now() FROM generate_series(1, $4::int) g`,
    [opts.type ?? 'work', group, opts.priority ?? 0, n, opts.ageMs ?? 3_600_000],
  );
};
const create = async (body: object) => {
  const res = await request(stack.app.server).post('/jobs').set('authorization', admin).send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string };
};

describe('fairness between groups', () => {
  it('leases a small group queued after a 50,000-job backlog among the next few leases', async () => {
    await backlog('customer:1', 50_000);
    const late = await Promise.all(Array.from({ length: 10 }, () => create({ type: 'work', group: 'customer:2' })));
    const seen: Leased[] = [];
    for (let i = 0; i < 2; i++) seen.push(...(await lease({ types: ['work'] })));
    // two leases of 10: the groups take turns, five each
    expect(
      seen
        .filter((j) => j.group === 'customer:2')
        .map((j) => j.id)
        .sort(),
    ).toEqual(late.map((j) => j.id).sort());
    expect(seen.filter((j) => j.group === 'customer:1')).toHaveLength(10);
    // within a group, the order stays runAt, then creation
    const ones = seen.filter((j) => j.group === 'customer:1').map((j) => Date.parse(j.runAt));
    expect(ones).toEqual([...ones].sort((a, b) => a - b));
  });

  it('explains a job behind the backlog of another group: only its own group and higher priorities come before it', async () => {
    await backlog('customer:1', 3_000);
    await backlog('customer:1', 7, { priority: 1 });
    const first = await create({ type: 'work', group: 'customer:2' });
    const second = await create({ type: 'work', group: 'customer:2' });
    const explain = async (id: string) => (await request(stack.app.server).get(`/jobs/${id}/explain`).set('authorization', admin)).body;
    expect((await explain(first.id)).reasons[0].detail).toMatch(/^It is runnable\. 7 runnable jobs come before it/);
    expect((await explain(second.id)).reasons[0].detail).toMatch(/^It is runnable\. 8 runnable jobs come before it/);
  });

  it('takes turns one job at a time as well (a worker leasing with limit 1, no types)', async () => {
    await backlog('customer:1', 5_000);
    await backlog('customer:2', 10, { ageMs: 1_000 });
    let leases = 0;
    let second = 0;
    while (second < 10 && leases < 200) {
      const [job] = await lease({ limit: 1 });
      leases++;
      if (job?.group === 'customer:2') second++;
    }
    // each lease picks between the two groups at random: 10 of them take 20 leases on average
    expect(second).toBe(10);
    expect(leases).toBeLessThan(80);
  });

  it('gives each of 100 groups one job of a lease of 100, whatever their backlogs', async () => {
    for (let g = 0; g < 100; g++) await backlog(`tenant:${g}`, g === 7 ? 2_000 : 3);
    const jobs = await lease({ limit: 100 });
    expect(jobs).toHaveLength(100);
    expect(new Set(jobs.map((j) => j.group)).size).toBe(100);
  });

  it('fills a lease from one group when the others have nothing left', async () => {
    await backlog('big', 500);
    await backlog('small', 3, { ageMs: 1_000 });
    const jobs = await lease({ limit: 100 });
    expect(jobs).toHaveLength(100);
    expect(jobs.filter((j) => j.group === 'small')).toHaveLength(3);
    expect(jobs.filter((j) => j.group === 'big')).toHaveLength(97);
  });

  it('looks at every group over time when there are more groups than a lease looks at', async () => {
    // 400 groups of one job and one group with a backlog: a lease of 100 looks at 200 groups from its
    // point of the ring, and takes at most one job of each while there are 100 groups or more to take from
    for (let g = 0; g < 400; g++) await backlog(`t${g}`, 1);
    await backlog('hog', 5_000, { ageMs: 7_200_000 });
    const taken: Leased[] = [];
    for (let i = 0; i < 3; i++) taken.push(...(await lease({ limit: 100 })));
    expect(taken).toHaveLength(300);
    expect(taken.filter((j) => j.group === 'hog').length).toBeLessThanOrEqual(3);
  });

  it('still lets priority win over turns, and a lease only mixes priorities highest first', async () => {
    await backlog('customer:1', 1_000, { priority: 5 });
    await backlog('customer:2', 10);
    const jobs = await lease({ limit: 100, types: ['work'] });
    // the whole higher-priority backlog of one group goes before the other group's turn
    expect(jobs).toHaveLength(100);
    expect(jobs.every((j) => j.group === 'customer:1' && j.priority === 5)).toBe(true);
    await tdb.db.pool.query(`UPDATE job SET priority = 0 WHERE state = 'queued' AND group_ = 'customer:1' AND id NOT IN (
      SELECT id FROM job WHERE state = 'queued' AND group_ = 'customer:1' ORDER BY run_at DESC LIMIT 5)`);
    const mixed = await lease({ limit: 100, types: ['work'] });
    // 5 jobs of priority 5 first, then turns between the groups at priority 0
    expect(mixed.slice(0, 5).every((j) => j.priority === 5)).toBe(true);
    expect(mixed.filter((j) => j.group === 'customer:2')).toHaveLength(10);
    expect(mixed).toHaveLength(100);
  });

  it('takes turns within the groups a worker names, and between types it names', async () => {
    await backlog('a', 1_000, { type: 'x' });
    await backlog('b', 5, { type: 'x', ageMs: 1_000 });
    await backlog('c', 5, { type: 'y', ageMs: 1_000 });
    await backlog('d', 5, { type: 'x', ageMs: 1_000 });
    const named = await lease({ limit: 10, groups: ['a', 'b'] });
    expect(named.filter((j) => j.group === 'b')).toHaveLength(5);
    expect(named.filter((j) => j.group === 'a')).toHaveLength(5);
    const typed = await lease({ limit: 15, types: ['x', 'y'] });
    expect(new Set(typed.map((j) => j.group))).toEqual(new Set(['a', 'c', 'd']));
    expect(typed.filter((j) => j.group === 'c')).toHaveLength(5);
    expect(typed.filter((j) => j.group === 'd')).toHaveLength(5);
  });

  it('passes over a paused group and a group at its limit, and a group with only later jobs', async () => {
    await backlog('paused', 10);
    await backlog('limited', 10);
    await backlog('later', 0);
    await create({ type: 'work', group: 'later', runAt: '2099-01-01T00:00:00.000Z' });
    await backlog('open', 10);
    const patch = (g: string, body: object) => request(stack.app.server).patch(`/groups/${g}`).set('authorization', admin).send(body);
    expect((await patch('paused', { paused: true })).status).toBe(200);
    expect((await patch('limited', { concurrency: 2 })).status).toBe(200);
    const jobs = await lease({ limit: 30 });
    expect(jobs.filter((j) => j.group === 'limited')).toHaveLength(2);
    expect(jobs.filter((j) => j.group === 'open')).toHaveLength(10);
    expect(jobs.filter((j) => j.group === 'paused' || j.group === 'later')).toHaveLength(0);
  });
});
