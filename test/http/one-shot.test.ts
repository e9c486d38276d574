/** One-shot jobs, the round trip: final failures, snoozes, checkpoints, startBy, uniqueFor. */
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.js';
import { type TestDatabase } from '../support/db.js';
import { type JobsApi, jobsApi, until } from './jobs-support.js';
import { useJobsApi } from '../support/fixture.js';

const T0 = '2026-11-20T09:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();

let tdb: TestDatabase;
let api: JobsApi;
let reaper: LeaseReaper;
const clock = new ManualClock(T0);

useJobsApi({ clock }, (f) => {
  ({ tdb, api } = f);
  api.stack.services.workers.random = () => 0.5;
  reaper = new LeaseReaper(api.stack.ctx); // never started: tests call tick() themselves
});
beforeEach(async () => {
  clock.set(T0);
  await tdb.db.pool.query('DELETE FROM job');
});

async function leaseOne(type = 't') {
  const jobs = await api.lease({ worker: 'w1', types: [type] });
  expect(jobs).toHaveLength(1);
  return jobs[0]!;
}

async function events(id: string) {
  return (await api.get(`/jobs/${id}/events`)).body.items as { kind: string; detail: Record<string, unknown> | null }[];
}

describe('failed with final: true', () => {
  it('fails the job for good although attempts remain', async () => {
    const job = await api.create({ type: 't', maxAttempts: 5 });
    const l = await leaseOne();
    const res = await api.post(`/jobs/${job.id}/failed`, { leaseToken: l.leaseToken, error: { message: 'bad address' }, final: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'failed', attempts: 1, finishedAt: T0, error: { message: 'bad address' } });
    expect((await events(job.id)).at(-1)).toMatchObject({ kind: 'failed', detail: { final: true } });
  });

  it('is a batched report too, and only for outcome failed', async () => {
    const job = await api.create({ type: 't', maxAttempts: 5 });
    const l = await leaseOne();
    const bad = await api.post('/jobs/reports', { reports: [{ id: job.id, leaseToken: l.leaseToken, outcome: 'finished', final: true }] });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('final');
    const res = await api.post('/jobs/reports', {
      reports: [{ id: job.id, leaseToken: l.leaseToken, outcome: 'failed', error: 'no', final: true }],
      returnJobs: true,
    });
    expect(res.body.results[0]).toMatchObject({ status: 200, job: { state: 'failed' } });
  });

  it('without final, a failure with attempts left is queued again', async () => {
    const job = await api.create({ type: 't', maxAttempts: 5 });
    const l = await leaseOne();
    const res = await api.post(`/jobs/${job.id}/failed`, { leaseToken: l.leaseToken, error: 'x', final: false });
    expect(res.body.state).toBe('queued');
  });
});

describe('release with retryIn (snooze) and state', () => {
  it('queues the job again after retryIn without counting the attempt', async () => {
    const job = await api.create({ type: 't', maxAttempts: 1 });
    const l = await leaseOne();
    clock.advance(1_000);
    const res = await api.post(`/jobs/${job.id}/release`, { leaseToken: l.leaseToken, retryIn: '10m' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'queued', attempts: 0, runAt: at(601_000), worker: null });
    clock.advance(599_999);
    expect(await api.lease({ worker: 'w1' })).toHaveLength(0);
    clock.advance(1);
    expect(await leaseOne()).toMatchObject({ id: job.id, attempts: 1 });
    expect((await events(job.id)).find((e) => e.kind === 'given-back')).toMatchObject({
      detail: { reason: 'given back by the worker', retryAt: at(601_000) },
    });
  });

  it('queues the job again at once without retryIn; a second release of the lease is 409', async () => {
    const job = await api.create({ type: 't' });
    const l = await leaseOne();
    expect((await api.post(`/jobs/${job.id}/release`, { leaseToken: l.leaseToken })).body).toMatchObject({ state: 'queued', runAt: T0 });
    expect((await api.post(`/jobs/${job.id}/release`, { leaseToken: l.leaseToken })).status).toBe(409);
  });

  it('refuses a retryIn that is not a duration, naming it', async () => {
    const job = await api.create({ type: 't' });
    const l = await leaseOne();
    const res = await api.post(`/jobs/${job.id}/release`, { leaseToken: l.leaseToken, retryIn: 'soon' });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('retryIn');
    expect((await api.get(`/jobs/${job.id}`)).body.state).toBe('running');
  });
});

describe('checkpoints', () => {
  it('keeps the state of a heartbeat and hands it to the next attempt after the lease expired', async () => {
    const job = await api.create({ type: 't' });
    const l = await leaseOne();
    expect(l.checkpoint).toBeNull();
    await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: l.leaseToken, state: { page: 7 } });
    expect((await api.get(`/jobs/${job.id}`)).body.checkpoint).toEqual({ page: 7 });
    clock.advance(31_000);
    expect(await reaper.tick(clock.now())).toMatchObject({ requeued: 1 });
    clock.advance(5_000);
    const again = await leaseOne();
    expect(again).toMatchObject({ id: job.id, attempts: 2, checkpoint: { page: 7 }, taskState: null });
  });

  it('keeps the state of a release and of a failed report', async () => {
    const job = await api.create({ type: 't' });
    const l1 = await leaseOne();
    await api.post(`/jobs/${job.id}/release`, { leaseToken: l1.leaseToken, state: { page: 1 } });
    const l2 = await leaseOne();
    expect(l2.checkpoint).toEqual({ page: 1 });
    await api.post(`/jobs/${job.id}/failed`, { leaseToken: l2.leaseToken, error: 'x', retryIn: '0s', state: { page: 2 } });
    const l3 = await leaseOne();
    expect(l3.checkpoint).toEqual({ page: 2 });
    const done = await api.post(`/jobs/${job.id}/finished`, { leaseToken: l3.leaseToken, state: { page: 3 } });
    expect(done.body).toMatchObject({ state: 'finished', checkpoint: { page: 3 } });
  });

  it('is read-only on POST /jobs', async () => {
    const res = await api.post('/jobs', { type: 't', checkpoint: { page: 1 } });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('checkpoint');
  });
});

describe('startBy', () => {
  it('never hands out a job past its startBy: the lease drops it, reason expired, with the reaper stopped', async () => {
    const late = await api.create({ type: 't', startBy: at(5_000), priority: 1 });
    const fresh = await api.create({ type: 't', startBy: at(60_000) });
    clock.advance(5_000);
    const leased = await leaseOne();
    expect(leased.id).toBe(fresh.id);
    const gone = (await api.get(`/jobs/${late.id}`)).body;
    expect(gone).toMatchObject({
      state: 'dropped',
      finishedAt: at(5_000),
      startBy: at(5_000),
      error: { kind: 'dropped', reason: 'expired' },
    });
    expect((await events(late.id)).at(-1)).toMatchObject({ kind: 'dropped', detail: { reason: 'expired' } });
  });

  it('hands out a job leased before its startBy', async () => {
    const job = await api.create({ type: 't', startBy: at(5_000) });
    clock.advance(4_999);
    expect((await leaseOne()).id).toBe(job.id);
  });

  it('is tidied up by the reaper when nobody tried to lease it', async () => {
    const job = await api.create({ type: 't', startBy: at(1_000) });
    const kept = await api.create({ type: 't', startBy: at(2_000) });
    clock.advance(1_000);
    expect(await reaper.tick(clock.now())).toMatchObject({ expired: 1 });
    expect((await api.get(`/jobs/${job.id}`)).body).toMatchObject({ state: 'dropped', error: { reason: 'expired' } });
    expect((await api.get(`/jobs/${kept.id}`)).body.state).toBe('queued');
  });

  it('is accepted by /jobs/batch and refused when not a timestamp, naming the field', async () => {
    const res = await api.post('/jobs/batch', { jobs: [{ type: 't' }, { type: 't', startBy: at(1_000) }] });
    expect(res.body.jobs.map((j: { startBy: string | null }) => j.startBy)).toEqual([null, at(1_000)]);
    const bad = await api.post('/jobs', { type: 't', startBy: 'tomorrow' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].path).toBe('/startBy');
    const badBatch = await api.post('/jobs/batch', { jobs: [{ type: 't' }, { type: 't', startBy: 5 }] });
    expect(badBatch.status).toBe(400);
    expect(badBatch.body.errors[0].path).toBe('/jobs/1/startBy');
    expect(Number((await tdb.db.pool.query('SELECT count(*) FROM job')).rows[0].count)).toBe(2);
  });
});

describe('startBy from SQL', () => {
  it('is taken by jobclock_add_job and jobclock_add_jobs, and the lease drops the job past it', async () => {
    // runAt: the functions read the database's clock, the test's is a manual one
    const { rows } = await tdb.db.pool.query(
      `SELECT jobclock_add_job('t', NULL, jsonb_build_object('startBy', $1::text, 'runAt', $2::text)) AS id`,
      [at(1_000), T0],
    );
    const one = String(rows[0].id);
    const many = await tdb.db.pool.query(`SELECT jobclock_add_jobs($1::jsonb) AS id`, [
      JSON.stringify([
        { type: 't', startBy: at(2_000), runAt: T0 },
        { type: 't', uniqueKey: 'u', startBy: at(3_000), runAt: T0 },
      ]),
    ]);
    const ids = many.rows.map((r) => String(r.id));
    expect((await api.get(`/jobs/${ids[0]}`)).body.startBy).toBe(at(2_000));
    expect((await api.get(`/jobs/${ids[1]}`)).body.startBy).toBe(at(3_000));
    clock.advance(2_500);
    expect((await leaseOne()).id).toBe(ids[1]);
    expect((await api.get(`/jobs/${one}`)).body).toMatchObject({ state: 'dropped', error: { reason: 'expired' } });
  });

  it('refuses a startBy that is not a timestamp, naming it', async () => {
    await expect(tdb.db.pool.query(`SELECT jobclock_add_job('t', NULL, '{"startBy": "soon"}')`)).rejects.toMatchObject({
      message: expect.stringContaining('options.startBy must be an ISO 8601 timestamp'),
      column: 'startBy',
    });
    await expect(tdb.db.pool.query(`SELECT jobclock_add_job('t', NULL, '{"colour": 1}')`)).rejects.toMatchObject({
      message: expect.stringContaining('traceparent, startBy'),
    });
  });
});

describe('uniqueFor', () => {
  it('matches a final job created within uniqueFor: a retried POST gets that job', async () => {
    const first = await api.post('/jobs', { type: 't', uniqueKey: 'order-1', uniqueFor: '24h' });
    expect(first.status).toBe(201);
    const l = await leaseOne();
    await api.post(`/jobs/${l.id}/finished`, { leaseToken: l.leaseToken, result: { ok: true } });
    clock.advance(23 * 3600_000);
    const again = await api.post('/jobs', { type: 't', uniqueKey: 'order-1', uniqueFor: '24h' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.body.id, state: 'finished', result: { ok: true } });
    // without uniqueFor only open jobs hold the key
    expect((await api.post('/jobs', { type: 't', uniqueKey: 'order-1' })).status).toBe(201);
  });

  it('creates a new job once the window has passed', async () => {
    const first = await api.create({ type: 't', uniqueKey: 'order-2', uniqueFor: '1h' });
    await api.post(`/jobs/${first.id}/cancel`);
    clock.advance(3600_000);
    const again = await api.post('/jobs', { type: 't', uniqueKey: 'order-2', uniqueFor: '1h' });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(first.id);
  });

  it('works in a batch', async () => {
    const first = await api.create({ type: 't', uniqueKey: 'order-3', uniqueFor: '1h' });
    await api.post(`/jobs/${first.id}/cancel`);
    const res = await api.post('/jobs/batch', {
      jobs: [
        { type: 't', uniqueKey: 'order-3', uniqueFor: '1h' },
        { type: 't', uniqueKey: 'order-4', uniqueFor: '1h' },
        { type: 't', uniqueKey: 'order-4', uniqueFor: '1h' },
      ],
    });
    expect(res.status).toBe(201);
    const ids = res.body.jobs.map((j: { id: string }) => j.id);
    expect(ids[0]).toBe(first.id);
    expect(ids[1]).toBe(ids[2]);
  });

  it('refuses uniqueFor over 30 days or without uniqueKey, naming it', async () => {
    const over = await api.post('/jobs', { type: 't', uniqueKey: 'k', uniqueFor: '31d' });
    expect(over.status).toBe(400);
    expect(over.body.errors[0].path).toBe('/uniqueFor');
    const alone = await api.post('/jobs', { type: 't', uniqueFor: '1h' });
    expect(alone.status).toBe(400);
    expect(alone.body.errors[0].path).toBe('/uniqueFor');
    expect(Number((await tdb.db.pool.query('SELECT count(*) FROM job')).rows[0].count)).toBe(0);
  });
});

describe('defaults per type', () => {
  it('apply to new jobs of the type that do not say otherwise, over HTTP and in SQL, and to leases without lease', async () => {
    const res = await api.patch('/types/mail.bulk', {
      defaults: { maxAttempts: 10, timebox: '2m', lease: '5m', priority: 3, startWithin: '1h' },
    });
    expect(res.status).toBe(200);
    expect(res.body.defaults).toEqual({ maxAttempts: 10, timebox: '2m', lease: '5m', priority: 3, startWithin: '1h' });
    expect((await api.get('/types/mail.bulk')).body.defaults).toEqual(res.body.defaults);
    const plain = await api.create({ type: 'mail.bulk' });
    expect(plain).toMatchObject({ maxAttempts: 10, timebox: '2m', priority: 3, startBy: at(3600_000) });
    const own = await api.create({ type: 'mail.bulk', maxAttempts: 2, timebox: null, priority: 0, startBy: null });
    expect(own).toMatchObject({ maxAttempts: 2, timebox: null, priority: 0, startBy: null });
    const batch = await api.post('/jobs/batch', { jobs: [{ type: 'mail.bulk' }, { type: 'other' }] });
    expect(batch.body.jobs.map((j: { maxAttempts: number }) => j.maxAttempts)).toEqual([10, 3]);
    const { rows } = await tdb.db.pool.query(`SELECT jobclock_add_job('mail.bulk', NULL, '{"priority": 1}') AS id`);
    expect((await api.get(`/jobs/${rows[0].id}`)).body).toMatchObject({ maxAttempts: 10, timebox: '2m', priority: 1 });
    await tdb.db.pool.query('DELETE FROM job WHERE id <> $1', [plain.id]);
    const leased = await leaseOne('mail.bulk');
    expect(leased.leaseExpiresAt).toBe(at(300_000));
    await api.create({ type: 'mail.bulk' });
    const [named] = await api.lease({ worker: 'w1', types: ['mail.bulk'], lease: '10s' });
    expect(named!.leaseExpiresAt).toBe(at(10_000));
  });

  it('are removed with null, and refuse unknown fields naming them, changing nothing', async () => {
    await api.patch('/types/mail.bulk2', { defaults: { maxAttempts: 7 } });
    const bad = await api.patch('/types/mail.bulk2', { defaults: { maxAttempts: 5, colour: 'red' } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body.errors)).toContain('colour');
    expect((await api.get('/types/mail.bulk2')).body.defaults).toEqual({ maxAttempts: 7 });
    expect((await api.patch('/types/mail.bulk2', { defaults: null })).body.defaults).toBeNull();
    expect((await api.create({ type: 'mail.bulk2' })).maxAttempts).toBe(3);
  });

  it("are read in one statement for concurrent creations, each job getting its own type's", async () => {
    await api.patch('/types/d.one', { defaults: { maxAttempts: 5, priority: 1 } });
    await api.patch('/types/d.two', { defaults: { maxAttempts: 9 } });
    const lookup = api.stack.services.jobs.typeDefaults!;
    const before = { ...lookup.stats };
    const client = await tdb.db.pool.connect();
    let sent: Promise<{ status: number; body: any }>[];
    try {
      await client.query('BEGIN');
      await client.query('LOCK TABLE job_type_defaults IN ACCESS EXCLUSIVE MODE');
      sent = Array.from({ length: 20 }, (_, i) => api.post('/jobs', { type: i % 2 === 0 ? 'd.one' : 'd.two', args: { i } }));
      await until(() => lookup.stats.items - before.items + lookup.pending === 20, 'all 20 creations at the defaults lookup');
    } finally {
      await client.query('COMMIT');
      client.release();
    }
    const answers = await Promise.all(sent);
    answers.forEach((r, i) => {
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject(i % 2 === 0 ? { maxAttempts: 5, priority: 1 } : { maxAttempts: 9, priority: 0 });
    });
    expect(lookup.stats.items - before.items).toBe(20);
    // the statements blocked by the lock, then one for everything that queued behind them
    expect(lookup.stats.statements - before.statements).toBeLessThanOrEqual(lookup.options.maxInFlight + 1);
  });

  it('that another instance changed apply to the next creation here', async () => {
    const other = await jobsApi({ db: tdb.connect(), instanceId: 'other', clock });
    try {
      await other.patch('/types/d.three', { defaults: { maxAttempts: 6 } });
      expect((await api.create({ type: 'd.three' })).maxAttempts).toBe(6);
      await other.patch('/types/d.three', { defaults: { maxAttempts: 8 } });
      expect((await api.create({ type: 'd.three' })).maxAttempts).toBe(8);
      await other.patch('/types/d.three', { defaults: null });
      expect((await api.create({ type: 'd.three' })).maxAttempts).toBe(3);
    } finally {
      await other.stack.close();
    }
  });

  it('are shown for each type by GET /types', async () => {
    await api.patch('/types/mail.bulk3', { defaults: { maxAttempts: 4, startWithin: '5m' } });
    await api.create({ type: 'mail.bulk3' });
    await api.create({ type: 'plain.kind' });
    const items = (await api.get('/types?limit=1000')).body.items as { type: string; defaults: unknown }[];
    expect(items.find((t) => t.type === 'mail.bulk3')?.defaults).toEqual({ maxAttempts: 4, startWithin: '5m' });
    expect(items.find((t) => t.type === 'plain.kind')?.defaults).toBeNull();
  });
});
