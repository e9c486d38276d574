/** A job's history (GET /jobs/{id}/events), search by args and creation time, and the bulk actions. */
import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.js';
import { bearer, TOKENS } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { type JobsApi } from './jobs-support.js';
import { useJobsApi } from '../support/fixture.js';

const T0 = '2026-11-20T09:00:00.000Z';
const clock = new ManualClock(T0);
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();
const admin = bearer('admin');
let tdb: TestDatabase;
let api: JobsApi;

useJobsApi({ clock, tokens: TOKENS }, (f) => ({ tdb, api } = f));
beforeEach(async () => {
  clock.set(T0);
  await tdb.db.pool.query('DELETE FROM job');
  await tdb.db.pool.query('DELETE FROM job_event');
});

const events = async (id: string) => {
  const res = await api.get(`/jobs/${id}/events`, admin);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.items as { at: string; kind: string; attempt: number | null; worker: string | null; actor: string | null; detail: any }[];
};
const create = async (body: object) => {
  const res = await api.post('/jobs', body, admin);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string };
};
const lease = async (type: string, worker: string, lease = '30s') => {
  const res = await api.post('/jobs/next', { worker, types: [type], lease }, admin);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.jobs[0] as { id: string; leaseToken: string };
};

describe('GET /jobs/{id}/events', () => {
  it('tells created, leased and finished from the job itself', async () => {
    const job = await create({ type: 'h.ok' });
    clock.set(at(1_000));
    const l = await lease('h.ok', 'w1');
    clock.set(at(3_000));
    expect((await api.post(`/jobs/${job.id}/finished`, { leaseToken: l.leaseToken }, admin)).status).toBe(200);
    expect(await events(job.id)).toEqual([
      { at: T0, kind: 'created', attempt: null, worker: null, actor: null, detail: { runAt: T0 } },
      expect.objectContaining({ at: at(1_000), kind: 'leased', attempt: 1, worker: 'w1', actor: null }),
      { at: at(3_000), kind: 'finished', attempt: 1, worker: 'w1', actor: null, detail: null },
    ]);
    const stored = await tdb.db.pool.query('SELECT count(*)::int AS n FROM job_event');
    expect(stored.rows[0].n).toBe(0); // the usual path stores nothing
  });

  it('keeps every attempt: a failure requeued with its backoff, an expired lease, a timeout', async () => {
    const job = await create({ type: 'h.many', maxAttempts: 3, timebox: '5s' });
    clock.set(at(1_000));
    const l = await lease('h.many', 'w1');
    clock.set(at(2_000));
    expect(
      (await api.post(`/jobs/${job.id}/failed`, { leaseToken: l.leaseToken, error: { message: 'smtp down' }, retryIn: '10s' }, admin))
        .status,
    ).toBe(200);
    clock.set(at(12_000));
    await lease('h.many', 'w2', '1s');
    clock.set(at(14_000));
    await new LeaseReaper(api.stack.ctx).tick(clock.now()); // the lease ran out: requeued
    clock.set(at(20_000));
    await lease('h.many', 'w3', '60s');
    clock.set(at(27_000)); // past deadline (25 s) + grace (1 s)
    await new LeaseReaper(api.stack.ctx).tick(clock.now());
    const h = await events(job.id);
    expect(h.map((e) => [e.kind, e.attempt, e.worker, e.at])).toEqual([
      ['created', null, null, T0],
      ['leased', 1, 'w1', at(1_000)],
      ['requeued', 1, 'w1', at(2_000)],
      ['leased', 2, 'w2', at(12_000)],
      ['lease-expired', 2, 'w2', at(14_000)],
      ['leased', 3, 'w3', at(20_000)],
      ['timed-out', 3, 'w3', at(27_000)],
    ]);
    expect(h[2]!.detail).toMatchObject({ error: { message: 'smtp down' }, retryAt: at(12_000) });
    expect(h[4]!.detail).toMatchObject({ error: { kind: 'lease_expired' } });
    expect(h[6]!.detail).toMatchObject({ error: { kind: 'timebox' } });
  });

  it('records a final failure, and the manual actions with the role that took them', async () => {
    const job = await create({ type: 'h.manual', maxAttempts: 1 });
    clock.set(at(1_000));
    expect((await api.patch(`/jobs/${job.id}`, { priority: 5 }, admin)).status).toBe(200);
    clock.set(at(2_000));
    const l = await lease('h.manual', 'w1');
    clock.set(at(3_000));
    expect((await api.post(`/jobs/${job.id}/failed`, { leaseToken: l.leaseToken, error: 'no' }, admin)).status).toBe(200);
    clock.set(at(4_000));
    expect((await api.post(`/jobs/${job.id}/retry`, {}, admin)).status).toBe(200);
    clock.set(at(5_000));
    expect((await api.post(`/jobs/${job.id}/cancel`, {}, admin)).status).toBe(200);
    const h = await events(job.id);
    expect(h.map((e) => [e.kind, e.actor])).toEqual([
      ['created', null],
      ['patched', 'admin'],
      ['leased', null],
      ['failed', null],
      ['retried', 'admin'],
      ['cancelled', 'admin'],
    ]);
    expect(h[1]!.detail).toEqual({ priority: 5 });
    expect(h[3]!.detail).toMatchObject({ error: 'no' });
    expect(h[4]!.detail).toMatchObject({ from: 'failed', error: 'no' });
    expect(h[5]!.detail).toEqual({ from: 'queued' });
  });

  it('is 404 for a job that does not exist, and open to a reader', async () => {
    expect((await api.get('/jobs/999999/events', admin)).status).toBe(404);
    const job = await create({ type: 'h.read' });
    expect((await api.get(`/jobs/${job.id}/events`, bearer('reader'))).status).toBe(200);
  });
});

describe('GET /jobs filters', () => {
  it('finds jobs whose args contain a JSON object, and by creation time', async () => {
    const a = await create({ type: 'f', args: { customer: 42, tags: ['x', 'y'] } });
    clock.set(at(60_000));
    const b = await create({ type: 'f', args: { customer: 42, tags: ['y'] } });
    await create({ type: 'f', args: { customer: 7 } });
    const q = (s: string) => api.get(`/jobs?${s}`, admin);
    const ids = (r: { body: { items: { id: string }[] } }) => r.body.items.map((j) => j.id);
    expect(ids(await q(`argsContains=${encodeURIComponent('{"customer":42}')}`))).toEqual([b.id, a.id]);
    expect(ids(await q(`argsContains=${encodeURIComponent('{"tags":["x"]}')}`))).toEqual([a.id]);
    expect(ids(await q(`argsContains=${encodeURIComponent('{"customer":42}')}&createdAfter=${encodeURIComponent(at(1))}`))).toEqual([b.id]);
    expect(ids(await q(`type=f&createdBefore=${encodeURIComponent(at(60_000))}`))).toEqual([a.id]);
  });

  it('refuses bad filters with a 400 naming the parameter', async () => {
    for (const bad of ['argsContains=%7Bnope', 'argsContains=%5B1%5D', 'createdAfter=yesterday', 'argsContains=42']) {
      const res = await api.get(`/jobs?${bad}`, admin);
      expect(res.status, bad).toBe(400);
      expect(res.body.errors[0].path).toBe(`/${bad.split('=')[0]}`);
    }
  });
});

describe('bulk actions', () => {
  it('retries the failed jobs of a type, at most limit, and leaves others alone', async () => {
    await tdb.db.pool.query(
      `INSERT INTO job (type, state, run_at, attempts, max_attempts, finished_at, error)
       SELECT CASE WHEN g % 4 = 0 THEN 'other' ELSE 'mail' END, 'failed', $1, 3, 3, $1, '"boom"'::jsonb FROM generate_series(1, 1200) g`,
      [T0],
    );
    const res = await api.post('/jobs/retry', { filter: { type: 'mail', state: 'failed' }, limit: 700 }, admin);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ affected: 700 });
    const { rows } = await tdb.db.pool.query(`SELECT type, state, count(*)::int AS n FROM job GROUP BY 1, 2 ORDER BY 1, 2`);
    expect(rows).toEqual([
      { type: 'mail', state: 'failed', n: 200 },
      { type: 'mail', state: 'queued', n: 700 },
      { type: 'other', state: 'failed', n: 300 },
    ]);
    const ev = await tdb.db.pool.query(`SELECT count(*)::int AS n FROM job_event WHERE kind = 'retried' AND actor = 'admin'`);
    expect(ev.rows[0].n).toBe(700);
    // the rest, without a limit
    expect((await api.post('/jobs/retry', { filter: { type: 'mail' } }, admin)).body).toEqual({ affected: 200 });
  });

  it('cancels queued and running jobs a filter selects, and a running one learns it at its heartbeat', async () => {
    await create({ type: 'c', args: { batch: 1 } });
    await create({ type: 'c', args: { batch: 1 } });
    await create({ type: 'c', args: { batch: 2 } });
    const running = await lease('c', 'w1');
    const res = await api.post('/jobs/cancel', { filter: { type: 'c', argsContains: { batch: 1 } } }, admin);
    expect(res.body).toEqual({ affected: 2 });
    const hb = await api.post(`/jobs/${running.id}/heartbeat`, { leaseToken: running.leaseToken }, admin);
    expect(hb.body.cancel).toBe(true);
    const left = await api.get('/jobs?type=c&state=queued', admin);
    expect(left.body.items).toHaveLength(1);
  });

  it('retries a job holding a uniqueKey unless another open job holds that key now', async () => {
    const first = await create({ type: 'u', uniqueKey: 'k1' });
    await api.post(`/jobs/${first.id}/cancel`, {}, admin);
    await create({ type: 'u', uniqueKey: 'k1' }); // holds k1 now
    const other = await create({ type: 'u', uniqueKey: 'k2' });
    await api.post(`/jobs/${other.id}/cancel`, {}, admin);
    expect((await api.post('/jobs/retry', { filter: { type: 'u' } }, admin)).body).toEqual({ affected: 1 });
    expect((await api.get(`/jobs/${first.id}`, admin)).body.state).toBe('cancelled');
    expect((await api.get(`/jobs/${other.id}`, admin)).body.state).toBe('queued');
  });

  it('is for admins only, and refuses a bad body with a 400 that changes nothing', async () => {
    await create({ type: 'r' });
    for (const role of ['reader', 'producer', 'worker'] as const) {
      expect((await api.post('/jobs/cancel', { filter: {} }, bearer(role))).status).toBe(403);
    }
    for (const bad of [
      {},
      { filter: { nope: 1 } },
      { filter: {}, limit: 10_001 },
      { filter: {}, limit: 0 },
      { filter: { argsContains: [1] } },
    ]) {
      const res = await api.post('/jobs/cancel', bad, admin);
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    expect((await api.get('/jobs?state=queued', admin)).body.items).toHaveLength(1);
  });
});

describe('traceparent', () => {
  const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const TP2 = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

  it("keeps the producer request's traceparent header with the job and hands it to the worker in the lease", async () => {
    const res = await api.post('/jobs', { type: 'trace' }, admin);
    expect(res.body.traceparent).toBeNull();
    const traced = await request(api.stack.app.server)
      .post('/jobs')
      .set('authorization', admin)
      .set('traceparent', TP)
      .send({ type: 'trace.on' });
    expect(traced.status).toBe(201);
    expect(traced.body.traceparent).toBe(TP);
    const leased = await api.post('/jobs/next', { worker: 'w', types: ['trace.on'] }, admin);
    expect(leased.body.jobs[0].traceparent).toBe(TP);
  });

  it('takes the body field over the header, ignores an invalid header, and refuses an invalid field', async () => {
    const withBoth = await request(api.stack.app.server)
      .post('/jobs/batch')
      .set('authorization', admin)
      .set('traceparent', TP)
      .send({ jobs: [{ type: 'trace.b', traceparent: TP2 }, { type: 'trace.b' }] });
    expect(withBoth.status).toBe(201);
    expect(withBoth.body.jobs.map((j: { traceparent: string }) => j.traceparent)).toEqual([TP2, TP]);
    const badHeader = await request(api.stack.app.server)
      .post('/jobs')
      .set('authorization', admin)
      .set('traceparent', 'nonsense')
      .send({ type: 'trace.c' });
    expect(badHeader.status).toBe(201);
    expect(badHeader.body.traceparent).toBeNull();
    for (const bad of [
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      'x',
    ]) {
      const res = await api.post('/jobs', { type: 'trace.d', traceparent: bad }, admin);
      expect(res.status, bad).toBe(400);
      expect(res.body.errors[0].path).toBe('/traceparent');
    }
  });
});
