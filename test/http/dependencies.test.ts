/** Jobs that wait for other jobs: graphs in a batch, unblocking, results handed down, cascades. */
import { describe, expect, it } from 'vitest';
import { jobDeleteOld } from '../../src/repositories/jobs.js';
import { type TestDatabase } from '../support/db.js';
import { useJobsApi } from '../support/fixture.js';
import { type JobsApi } from './jobs-support.js';

let tdb: TestDatabase;
let api: JobsApi;
useJobsApi({ clean: ['job_dependency', 'job_event', 'job'] }, (f) => ({ tdb, api } = f));

type Job = Record<string, any>;

async function batch(jobs: Record<string, unknown>[]): Promise<Job[]> {
  const res = await api.post('/jobs/batch', { jobs });
  if (res.status !== 201) throw new Error(`POST /jobs/batch answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.jobs;
}

const get = async (id: string): Promise<Job> => (await api.get(`/jobs/${id}`)).body;

async function finish(job: Job, result: unknown = null) {
  const res = await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken, result });
  expect(res.status).toBe(200);
}

async function fail(job: Job) {
  const res = await api.post(`/jobs/${job.id}/failed`, { leaseToken: job.leaseToken, error: 'broken', retryIn: '1ms' });
  expect(res.status).toBe(200);
  return res.body;
}

const events = async (id: string) => (await api.get(`/jobs/${id}/events`)).body.items as { kind: string; detail: any }[];
const jobCount = async () => Number((await tdb.db.pool.query('SELECT count(*) AS n FROM job')).rows[0].n);

describe('a chain', () => {
  it('runs each job only after the one before it finished, handing its result down', async () => {
    const [a, b, c] = await batch([
      { type: 'chain', ref: 'a', args: { step: 1 } },
      { type: 'chain', ref: 'b', after: ['a'] },
      { type: 'chain', after: ['b'] },
    ]);
    expect([a!.state, b!.state, c!.state]).toEqual(['queued', 'waiting', 'waiting']);
    expect(c!.after).toEqual([b!.id]);
    expect(b!.onDependencyFailure).toBe('cancel');
    expect(await get(c!.id)).toMatchObject({ state: 'waiting', after: [b!.id] });

    const explain = (await api.get(`/jobs/${c!.id}/explain`)).body;
    expect(explain).toMatchObject({ state: 'waiting', runnable: false, reasons: [{ code: 'waiting-for-dependencies' }] });
    expect(explain.reasons[0].detail).toContain(b!.id);

    const first = await api.lease({ worker: 'w', types: ['chain'], limit: 10 });
    expect(first.map((j) => j.id)).toEqual([a!.id]);
    expect(first[0]!.dependencies).toBeUndefined();
    await finish(first[0]!, { pages: 3 });

    const second = await api.lease({ worker: 'w', types: ['chain'], limit: 10 });
    expect(second.map((j) => j.id)).toEqual([b!.id]);
    expect(second[0]!.dependencies).toEqual([{ id: a!.id, type: 'chain', state: 'finished', result: { pages: 3 } }]);
    expect((await get(c!.id)).state).toBe('waiting');
    await finish(second[0]!, 'b done');

    const third = await api.lease({ worker: 'w', types: ['chain'], limit: 10 });
    expect(third.map((j) => j.id)).toEqual([c!.id]);
    expect(third[0]!.dependencies).toEqual([{ id: b!.id, type: 'chain', state: 'finished', result: 'b done' }]);
  });
});

describe('fan-out and fan-in', () => {
  it('runs the merge once, after every page, with every page result', async () => {
    const pages = Array.from({ length: 50 }, (_, i) => ({ type: 'page', ref: `page-${i}`, args: { page: i } }));
    const created = await batch([...pages, { type: 'merge', after: pages.map((p) => p.ref) }]);
    const merge = created.at(-1)!;
    expect(merge.state).toBe('waiting');
    expect(await api.lease({ worker: 'w', types: ['merge'] })).toEqual([]);
    const leased = await api.lease({ worker: 'w', types: ['page'], limit: 100 });
    expect(leased).toHaveLength(50);
    // a long-poll for the merge, answered when the last page finishes
    const poll = api.post('/jobs/next', { worker: 'm', types: ['merge'], wait: '10s' });
    for (const p of leased.slice(0, -1)) await finish(p, { url: `https://x/${p.args.page}.pdf` });
    expect((await get(merge.id)).state).toBe('waiting');
    const last = leased.at(-1)!;
    await finish(last, { url: `https://x/${last.args.page}.pdf` });
    const res = await poll;
    expect(res.status).toBe(200);
    const m = res.body.jobs[0];
    expect(m.id).toBe(merge.id);
    expect(m.dependencies).toHaveLength(50);
    expect(m.dependencies.map((d: Job) => d.result.url)).toEqual(pages.map((_, i) => `https://x/${i}.pdf`));
  });
});

describe('failures', () => {
  it('cancels the dependents down the graph, but runs one that says onDependencyFailure run', async () => {
    const [a, b, c, report] = await batch([
      { type: 'f', ref: 'a', maxAttempts: 1 },
      { type: 'f', ref: 'b', after: ['a'] },
      { type: 'f', ref: 'c', after: ['b'] },
      { type: 'report', after: ['b', 'c'], onDependencyFailure: 'run' },
    ]);
    const [la] = await api.lease({ worker: 'w', types: ['f'] });
    expect(la!.id).toBe(a!.id);
    await fail(la!);
    expect(await get(b!.id)).toMatchObject({ state: 'cancelled' });
    expect(await get(c!.id)).toMatchObject({ state: 'cancelled' });
    expect((await events(c!.id)).at(-1)).toMatchObject({ kind: 'cancelled', detail: { reason: 'dependency-failed' } });
    expect(await api.lease({ worker: 'w', types: ['f'] })).toEqual([]);
    const [r] = await api.lease({ worker: 'w', types: ['report'] });
    expect(r!.id).toBe(report!.id);
    expect(r!.dependencies.map((d: Job) => d.state)).toEqual(['cancelled', 'cancelled']);
  });

  it('a retried dependency that finally succeeds cancels nothing', async () => {
    const [a, b] = await batch([
      { type: 'r', ref: 'a', maxAttempts: 2 },
      { type: 'r', after: ['a'] },
    ]);
    const [l1] = await api.lease({ worker: 'w', types: ['r'] });
    expect(await fail(l1!)).toMatchObject({ state: 'queued' });
    expect((await get(b!.id)).state).toBe('waiting');
    await new Promise((r) => setTimeout(r, 5));
    const [l2] = await api.lease({ worker: 'w', types: ['r'] });
    expect(l2!.id).toBe(a!.id);
    await finish(l2!, 'ok');
    expect((await get(b!.id)).state).toBe('queued');
  });

  it('a dependency retried after it failed is waited for again', async () => {
    const [a, b, r] = await batch([
      { type: 'ra', ref: 'a', maxAttempts: 1 },
      { type: 'rb', ref: 'b' },
      { type: 'rr', after: ['a', 'b'], onDependencyFailure: 'run' },
    ]);
    await fail((await api.lease({ worker: 'w', types: ['ra'] }))[0]!);
    expect((await api.post(`/jobs/${a!.id}/retry`)).status).toBe(200);
    await finish((await api.lease({ worker: 'w', types: ['rb'] }))[0]!);
    // a is queued again: r waits for it, although its other dependency finished and a had ended once
    expect((await get(r!.id)).state).toBe('waiting');
    const again = (await api.lease({ worker: 'w', types: ['ra'] }))[0]!;
    expect(again.id).toBe(a!.id);
    await finish(again, 'second time');
    const [lr] = await api.lease({ worker: 'w', types: ['rr'] });
    expect(lr!.dependencies.map((d: Job) => [d.id, d.state])).toEqual([
      [a!.id, 'finished'],
      [b!.id, 'finished'],
    ]);
  });

  it('cancelling a waiting job cancels its dependents', async () => {
    const [, b, c] = await batch([
      { type: 'x', ref: 'a' },
      { type: 'x', ref: 'b', after: ['a'] },
      { type: 'x', after: ['b'] },
    ]);
    expect((await api.post(`/jobs/${b!.id}/cancel`)).status).toBe(200);
    expect((await get(c!.id)).state).toBe('cancelled');
  });
});

describe('after existing jobs', () => {
  it('queues at once after a finished job, waits for an open one, is cancelled after a failed one', async () => {
    const done = await api.create({ type: 'e' });
    const [l] = await api.lease({ worker: 'w', types: ['e'] });
    await finish(l!, 42);
    const open = await api.create({ type: 'open' });
    const failed = await api.create({ type: 'bad', maxAttempts: 1 });
    await fail((await api.lease({ worker: 'w', types: ['bad'] }))[0]!);

    expect(await api.create({ type: 'n', after: [done.id] })).toMatchObject({ state: 'queued', after: [done.id] });
    const waiting = await api.create({ type: 'n', after: [done.id, open.id] });
    expect(waiting.state).toBe('waiting');
    expect(await api.create({ type: 'n', after: [failed.id] })).toMatchObject({ state: 'cancelled' });
    expect(await api.create({ type: 'n', after: [failed.id], onDependencyFailure: 'run' })).toMatchObject({ state: 'queued' });

    const [lo] = await api.lease({ worker: 'w', types: ['open'] });
    await finish(lo!, 'fine');
    expect((await get(waiting.id)).state).toBe('queued');
  });
});

describe('bad graphs', () => {
  it.each([
    [
      'a cycle',
      [
        { type: 'c', ref: 'a', after: ['b'] },
        { type: 'c', ref: 'b', after: ['a'] },
      ],
      '/jobs/0/after',
    ],
    ['a job after itself', [{ type: 'c', ref: 'a', after: ['a'] }], '/jobs/0/after'],
    [
      'an unknown ref',
      [
        { type: 'c', ref: 'a' },
        { type: 'c', after: ['nope'] },
      ],
      '/jobs/1/after/0',
    ],
    [
      'a duplicate ref',
      [
        { type: 'c', ref: 'a' },
        { type: 'c', ref: 'a' },
      ],
      '/jobs/1/ref',
    ],
    ['a ref shaped like an id', [{ type: 'c', ref: '12' }], '/jobs/0/ref'],
    [
      'an unknown job id',
      [
        { type: 'c', ref: 'a' },
        { type: 'c', after: ['a', '999999999'] },
      ],
      '/jobs/1/after',
    ],
    ['a uniqueKey in a graph', [{ type: 'c', ref: 'a', uniqueKey: 'k' }], '/jobs/0/uniqueKey'],
  ])('%s is a 400 naming the body, and creates nothing', async (_, jobs, path) => {
    const res = await api.post('/jobs/batch', { jobs });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(await jobCount()).toBe(0);
  });
});

describe('retention', () => {
  it('keeps a final job that an open job runs after, and deletes it with its edges once that one ended', async () => {
    const [a, , c] = await batch([
      { type: 'k', ref: 'a' },
      { type: 'k2', ref: 'b' },
      { type: 'k3', after: ['a', 'b'] },
    ]);
    const [la] = await api.lease({ worker: 'w', types: ['k'] });
    await finish(la!, 'kept');
    const later = new Date(Date.now() + 3_600_000);
    expect(await jobDeleteOld(tdb.db, later, 100)).toBe(0);
    expect((await get(a!.id)).state).toBe('finished');
    await api.post(`/jobs/${c!.id}/cancel`);
    await api.post(`/jobs/batch`, { jobs: [{ type: 'unrelated' }] });
    await tdb.db.pool.query(`UPDATE job SET state = 'cancelled', finished_at = now() WHERE state = 'queued'`);
    expect(await jobDeleteOld(tdb.db, later, 100)).toBe(4);
    expect((await tdb.db.pool.query('SELECT count(*) AS n FROM job_dependency')).rows[0].n).toBe(0);
  });
});

describe('GET /jobs/{id}/graph', () => {
  it('lists what a job runs after and what runs after it, with states', async () => {
    const [a, b, c, d] = await batch([
      { type: 'g', ref: 'a' },
      { type: 'g', ref: 'b' },
      { type: 'g2', ref: 'c', after: ['b', 'a'] },
      { type: 'g3', after: ['c'] },
    ]);
    const res = await api.get(`/jobs/${c!.id}/graph`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: c!.id,
      state: 'waiting',
      dependencies: [
        { id: b!.id, type: 'g', state: 'queued', finishedAt: null },
        { id: a!.id, type: 'g', state: 'queued', finishedAt: null },
      ],
      dependents: [{ id: d!.id, type: 'g3', state: 'waiting' }],
      more: { dependencies: 0, dependents: 0 },
    });
    expect((await api.get(`/jobs/${a!.id}/graph`)).body).toMatchObject({ dependencies: [], dependents: [{ id: c!.id }] });
    expect((await api.get('/jobs/999999/graph')).status).toBe(404);
  });
});

describe('a job created after one that ends at the same moment', () => {
  it('is never left waiting: the creation and the report meet on the dependency row', { timeout: 60_000 }, async () => {
    const created: string[] = [];
    for (let round = 0; round < 40; round++) {
      const deps = await batch(Array.from({ length: 5 }, () => ({ type: 'race' })));
      const leased = await api.lease({ worker: 'w', types: ['race'], limit: 5 });
      const [res] = await Promise.all([
        api.post('/jobs/batch', { jobs: deps.map((d) => ({ type: 'race-after', after: [d.id] })) }),
        api.post('/jobs/reports', { reports: leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' })) }),
      ]);
      expect(res.status).toBe(201);
      created.push(...res.body.jobs.map((j: Job) => j.id));
    }
    const { rows } = await tdb.db.pool.query(`SELECT state, count(*)::int AS n FROM job WHERE id = ANY ($1::bigint[]) GROUP BY 1`, [
      created,
    ]);
    expect(rows).toEqual([{ state: 'queued', n: 200 }]);
  });
});

describe('counts and filters', () => {
  it('counts waiting jobs per type and group, and lists them by state', async () => {
    await batch([
      { type: 'ct', ref: 'a', group: 'g1' },
      { type: 'ct-after', after: ['a'], group: 'g1' },
      { type: 'ct-after', after: ['a'], group: 'g2' },
    ]);
    expect((await api.get('/types/ct-after')).body.counts).toEqual({ queued: 0, scheduled: 0, running: 0, waiting: 2 });
    expect((await api.get('/groups/g1')).body.counts).toEqual({ queued: 1, scheduled: 0, running: 0, waiting: 1 });
    const listed = (await api.get('/types')).body.items.map((t: Job) => t.type);
    expect(listed).toContain('ct-after');
    const waiting = (await api.get('/jobs?state=waiting')).body.items;
    expect(waiting.map((j: Job) => j.type)).toEqual(['ct-after', 'ct-after']);
    const metrics = (await api.get('/metrics')).text;
    expect(metrics).toMatch(/jobclock_jobs\{type="ct-after",state="waiting"\} 2/);
  });
});
