/** The worker protocol over HTTP with a controlled clock: lease, heartbeat, finished, failed, reports. */
import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.js';
import { type TestDatabase } from '../support/db.js';
import { holdingJobTable, insertTask, insertTaskJob, type JobsApi, until } from './jobs-support.js';
import { useJobsApi } from '../support/fixture.js';

const T0 = '2026-11-20T09:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const WRONG_TOKEN = '3f1c2b9e-8d4a-4c6b-9a51-2b7e0c1d5f00';

let tdb: TestDatabase;
let api: JobsApi;
let reaper: LeaseReaper;
const clock = new ManualClock(T0);

useJobsApi({ clock }, (f) => {
  ({ tdb, api } = f);
  api.stack.services.workers.random = () => 0.5; // backoff without jitter: exactly 2^attempts s
  reaper = new LeaseReaper(api.stack.ctx);
});
beforeEach(async () => {
  clock.set(T0);
  await tdb.db.pool.query('DELETE FROM job');
});

async function leaseOne(body: Record<string, unknown> = {}) {
  const jobs = await api.lease({ worker: 'w1', ...body });
  expect(jobs).toHaveLength(1);
  return jobs[0]!;
}

describe('POST /jobs/next', () => {
  it('hands out a job with a fresh lease: token, worker, attempts, start, lease expiry and deadline', async () => {
    const created = await api.create({ type: 't', timebox: '10s', args: { n: 1 } });
    clock.advance(1_000);
    const res = await api.post('/jobs/next', { worker: 'w1', lease: '45s' });
    expect(res.status).toBe(200);
    expect(res.body.jobs).toHaveLength(1);
    const job = res.body.jobs[0];
    expect(job).toMatchObject({
      id: created.id,
      state: 'running',
      worker: 'w1',
      attempts: 1,
      args: { n: 1 },
      startedAt: at(1_000),
      leaseExpiresAt: at(46_000),
      deadline: at(11_000),
      taskState: null,
      updatedAt: at(1_000),
    });
    expect(job.leaseToken).toMatch(UUID);
    expect((await api.get(`/jobs/${job.id}`)).body).not.toHaveProperty('leaseToken');
  });

  it('has no deadline without a timebox and a 30 s lease by default', async () => {
    await api.create({ type: 't' });
    expect(await leaseOne()).toMatchObject({ deadline: null, leaseExpiresAt: at(30_000) });
  });

  it('leases by priority (higher first), then runAt, then creation', async () => {
    const a = await api.create({ type: 't', priority: 0, runAt: at(-3_000) });
    const b = await api.create({ type: 't', priority: 5, runAt: at(-1_000) });
    const c = await api.create({ type: 't', priority: 0, runAt: at(-5_000) });
    const d = await api.create({ type: 't', priority: 0, runAt: at(-3_000) });
    const e = await api.create({ type: 't', priority: 5, runAt: at(-2_000) });
    const jobs = await api.lease({ worker: 'w1', limit: 10 });
    expect(jobs.map((j) => j.id)).toEqual([e.id, b.id, c.id, a.id, d.id]);
  });

  it('does not hand out a job before its runAt', async () => {
    const job = await api.create({ type: 't', runAt: at(60_000) });
    expect((await api.post('/jobs/next', { worker: 'w1' })).status).toBe(204);
    clock.advance(59_999);
    expect(await api.lease({ worker: 'w1' })).toEqual([]);
    clock.advance(1);
    expect((await leaseOne()).id).toBe(job.id);
  });

  it('hands out only the types and groups asked for', async () => {
    const mail = await api.create({ type: 'mail', group: 'eu' });
    const sms = await api.create({ type: 'sms', group: 'us' });
    const other = await api.create({ type: 'mail', group: 'us' });
    expect(await api.lease({ worker: 'w1', types: ['push'] })).toEqual([]);
    expect((await leaseOne({ types: ['sms', 'push'] })).id).toBe(sms.id);
    expect((await leaseOne({ types: ['mail'], groups: ['eu'] })).id).toBe(mail.id);
    expect((await leaseOne({ groups: ['us', 'eu'] })).id).toBe(other.id);
  });

  it('hands out up to limit jobs, one by default', async () => {
    await api.post('/jobs/batch', { jobs: Array.from({ length: 120 }, () => ({ type: 't' })) });
    expect(await api.lease({ worker: 'w1' })).toHaveLength(1);
    expect(await api.lease({ worker: 'w1', limit: 100 })).toHaveLength(100);
    expect(await api.lease({ worker: 'w1', limit: 100 })).toHaveLength(19);
  });

  it('refuses a bad lease request', async () => {
    for (const body of [
      {},
      { worker: '' },
      { worker: 'w'.repeat(201) },
      { worker: 'w', limit: 0 },
      { worker: 'w', limit: 101 },
      { worker: 'w', wait: '61s' },
      { worker: 'w', wait: 5 },
      { worker: 'w', lease: '500ms' },
      { worker: 'w', types: [] },
      { worker: 'w', types: 'mail' },
      { worker: 'w', state: 'running' },
    ]) {
      const res = await api.post('/jobs/next', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
  });
});

describe('POST /jobs/{id}/heartbeat', () => {
  it('extends the lease by the length given at lease time, or by the one it names', async () => {
    await api.create({ type: 't' });
    const job = await leaseOne({ lease: '2m' });
    clock.advance(60_000);
    let res = await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ leaseExpiresAt: at(180_000), deadline: null, cancel: false });
    res = await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken, lease: '10s' });
    expect(res.body.leaseExpiresAt).toBe(at(70_000));
  });

  it('records the progress it reports on the job', async () => {
    await api.create({ type: 't' });
    const job = await leaseOne();
    await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken, progress: { done: 40, of: 100 } });
    expect((await api.get(`/jobs/${job.id}`)).body.progress).toEqual({ done: 40, of: 100 });
    await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken });
    expect((await api.get(`/jobs/${job.id}`)).body.progress).toEqual({ done: 40, of: 100 });
  });

  it('answers cancel once the deadline has passed', async () => {
    await api.create({ type: 't', timebox: '30s' });
    const job = await leaseOne();
    clock.advance(29_999);
    expect((await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken })).body.cancel).toBe(false);
    clock.advance(1);
    const res = await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ cancel: true, deadline: at(30_000) });
  });

  it('answers cancel when the job was cancelled while running, without extending the lease', async () => {
    await api.create({ type: 't' });
    const job = await leaseOne();
    await api.post(`/jobs/${job.id}/cancel`);
    clock.advance(5_000);
    const res = await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken });
    expect(res.status).toBe(200);
    expect(res.body.cancel).toBe(true);
  });

  it('answers 409 to a wrong or stale token, 404 to an unknown job, 400 to a malformed token', async () => {
    await api.create({ type: 't' });
    const job = await leaseOne();
    const wrong = await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: WRONG_TOKEN });
    expect(wrong.status).toBe(409);
    expect(wrong.body.type).toBe('urn:jobclock:problem:lease-lost');
    expect(wrong.body.detail).toMatch(/lease was lost/);
    expect((await api.post('/jobs/424242/heartbeat', { leaseToken: job.leaseToken })).status).toBe(404);
    expect((await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: 'not-a-token' })).status).toBe(400);
  });

  it('is refused after the grace that follows the deadline', async () => {
    await api.create({ type: 't', timebox: '30s' });
    const job = await leaseOne();
    clock.advance(33_000); // deadline + 10 %
    expect((await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken })).status).toBe(200);
    clock.advance(1);
    const late = await api.post(`/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken });
    expect(late.status).toBe(409);
    expect(late.body.detail).toMatch(/past its deadline/);
  });
});

describe('POST /jobs/{id}/finished', () => {
  it('finishes the job and keeps its result', async () => {
    await api.create({ type: 't' });
    const job = await leaseOne();
    clock.advance(2_500);
    const res = await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken, result: { sent: 3 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: job.id,
      state: 'finished',
      result: { sent: 3 },
      finishedAt: at(2_500),
      leaseExpiresAt: null,
      attempts: 1,
    });
    expect(res.body).not.toHaveProperty('leaseToken');
  });

  it('answers a repeated report with the same token with 200 and the job as it is', async () => {
    await api.create({ type: 't' });
    const job = await leaseOne();
    const first = await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken, result: 1 });
    clock.advance(1_000);
    const again = await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken, result: 2 });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it('answers 409 to a token whose lease was lost and to a wrong one', async () => {
    await api.create({ type: 't' });
    const first = await leaseOne({ lease: '5s' });
    clock.advance(6_000);
    expect((await reaper.tick(clock.now())).requeued).toBe(1);
    const second = await leaseOne({ worker: 'w2' });
    expect(second.id).toBe(first.id);
    const stale = await api.post(`/jobs/${first.id}/finished`, { leaseToken: first.leaseToken });
    expect(stale.status).toBe(409);
    expect(stale.body.type).toBe('urn:jobclock:problem:lease-lost');
    expect((await api.post(`/jobs/${first.id}/finished`, { leaseToken: WRONG_TOKEN })).status).toBe(409);
    expect((await api.post(`/jobs/${second.id}/finished`, { leaseToken: second.leaseToken })).status).toBe(200);
    expect((await api.post('/jobs/424242/finished', { leaseToken: WRONG_TOKEN })).status).toBe(404);
  });

  it('answers 204 without the job to Prefer: return=minimal, once applied; errors stay problem documents', async () => {
    await api.create({ type: 't' });
    await api.create({ type: 't' });
    const [a, b] = await api.lease({ worker: 'w1', limit: 2 });
    const minimal = (path: string, body: unknown) =>
      request(api.stack.app.server)
        .post(path)
        .set('prefer', 'return=minimal')
        .send(body as object);
    const done = await minimal(`/jobs/${a!.id}/finished`, { leaseToken: a!.leaseToken, result: { sent: 1 } });
    expect(done.status).toBe(204);
    expect(done.headers['preference-applied']).toBe('return=minimal');
    expect(done.text).toBe('');
    expect((await api.get(`/jobs/${a!.id}`)).body).toMatchObject({ state: 'finished', result: { sent: 1 } });
    const failed = await minimal(`/jobs/${b!.id}/failed`, { leaseToken: b!.leaseToken, error: { message: 'no' }, final: true });
    expect(failed.status).toBe(204);
    expect((await api.get(`/jobs/${b!.id}`)).body).toMatchObject({ state: 'failed', error: { message: 'no' } });
    // a repeat is harmless; a wrong token is still 409, an unknown job 404, with their problem documents
    expect((await minimal(`/jobs/${a!.id}/finished`, { leaseToken: a!.leaseToken })).status).toBe(204);
    const wrong = await minimal(`/jobs/${a!.id}/finished`, { leaseToken: WRONG_TOKEN });
    expect(wrong.status).toBe(409);
    expect(wrong.body.type).toBe('urn:jobclock:problem:lease-lost');
    expect((await minimal('/jobs/424242/finished', { leaseToken: WRONG_TOKEN })).status).toBe(404);
  });

  it('accepts a report inside the grace after the deadline and refuses one after it', async () => {
    await api.post('/jobs/batch', {
      jobs: [
        { type: 't', timebox: '30s' },
        { type: 't', timebox: '30s' },
      ],
    });
    const [a, b] = await api.lease({ worker: 'w1', limit: 2 });
    clock.advance(33_000);
    expect((await api.post(`/jobs/${a!.id}/finished`, { leaseToken: a!.leaseToken })).status).toBe(200);
    clock.advance(1);
    const late = await api.post(`/jobs/${b!.id}/finished`, { leaseToken: b!.leaseToken });
    expect(late.status).toBe(409);
    expect(late.body.detail).toMatch(/too late/);
  });

  it('accepts the report of a job cancelled while it ran; the job stays cancelled', async () => {
    await api.create({ type: 't' });
    const job = await leaseOne();
    await api.post(`/jobs/${job.id}/cancel`);
    const res = await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken, result: 'late' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'cancelled', result: null });
  });
});

describe('POST /jobs/{id}/release', () => {
  it('gives the lease back: queued again at once, the attempt not counted, leasable by the next worker', async () => {
    const created = await api.create({ type: 't', maxAttempts: 1 });
    const job = await leaseOne();
    const res = await api.post(`/jobs/${job.id}/release`, { leaseToken: job.leaseToken });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ id: created.id, state: 'queued', attempts: 0, worker: null, startedAt: null });
    const again = await leaseOne({ worker: 'w2' });
    expect(again).toMatchObject({ id: created.id, attempts: 1, worker: 'w2' });
    // the old token is not a lease any more: giving it back again, or reporting with it, is a 409
    expect((await api.post(`/jobs/${job.id}/release`, { leaseToken: job.leaseToken })).status).toBe(409);
    expect((await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken })).status).toBe(409);
    expect((await api.post(`/jobs/${again.id}/finished`, { leaseToken: again.leaseToken })).status).toBe(200);
  });

  it('answers 409 for a finished job, 404 for an unknown one, 400 for a malformed token', async () => {
    await api.create({ type: 't' });
    const job = await leaseOne();
    expect((await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken })).status).toBe(200);
    const late = await api.post(`/jobs/${job.id}/release`, { leaseToken: job.leaseToken });
    expect(late.status).toBe(409);
    expect(late.body.detail).toMatch(/finished/);
    expect((await api.post('/jobs/999999/release', { leaseToken: WRONG_TOKEN })).status).toBe(404);
    const bad = await api.post(`/jobs/${job.id}/release`, { leaseToken: 'nope' });
    expect(bad.status).toBe(400);
    expect((await api.get(`/jobs/${job.id}`)).body.state).toBe('finished');
  });
});

describe('POST /jobs/{id}/failed', () => {
  it('queues the job again after an exponential backoff while attempts remain, then fails it', async () => {
    const created = await api.create({ type: 't', maxAttempts: 3 });
    let job = await leaseOne();
    let res = await api.post(`/jobs/${job.id}/failed`, { leaseToken: job.leaseToken, error: { message: 'first' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      state: 'queued',
      attempts: 1,
      runAt: at(2_000),
      error: { message: 'first' },
      finishedAt: null,
      leaseExpiresAt: null,
    });

    clock.advance(1_999);
    expect(await api.lease({ worker: 'w1' })).toEqual([]);
    clock.advance(1);
    job = await leaseOne();
    expect(job).toMatchObject({ id: created.id, attempts: 2 });
    res = await api.post(`/jobs/${job.id}/failed`, { leaseToken: job.leaseToken, error: 'second' });
    expect(res.body).toMatchObject({ state: 'queued', attempts: 2, runAt: at(2_000 + 4_000) });

    clock.advance(4_000);
    job = await leaseOne();
    res = await api.post(`/jobs/${job.id}/failed`, { leaseToken: job.leaseToken, error: 'third' });
    expect(res.body).toMatchObject({ state: 'failed', attempts: 3, error: 'third', finishedAt: at(6_000) });
  });

  it('queues the job again after retryIn when the worker names one', async () => {
    await api.create({ type: 't' });
    const job = await leaseOne();
    const res = await api.post(`/jobs/${job.id}/failed`, { leaseToken: job.leaseToken, error: 'later', retryIn: '90s' });
    expect(res.body).toMatchObject({ state: 'queued', runAt: at(90_000) });
    expect(await api.lease({ worker: 'w1' })).toEqual([]);
    await api.create({ type: 'u' });
    const again = await api.lease({ worker: 'w', types: ['u'] });
    const zero = await api.post(`/jobs/${again[0]!.id}/failed`, { leaseToken: again[0]!.leaseToken, error: 'now', retryIn: '0s' });
    expect(zero.body.runAt).toBe(at(0));
  });

  it('answers a repeated failure with the same token with 200 and changes nothing', async () => {
    await api.create({ type: 't' });
    const job = await leaseOne();
    const first = await api.post(`/jobs/${job.id}/failed`, { leaseToken: job.leaseToken, error: 'x' });
    const again = await api.post(`/jobs/${job.id}/failed`, { leaseToken: job.leaseToken, error: 'y' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const finishedInstead = await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken });
    expect(finishedInstead.status).toBe(409);
    expect(finishedInstead.body.detail).toMatch(/already reported/);
  });

  it('requires an error', async () => {
    await api.create({ type: 't' });
    const job = await leaseOne();
    const res = await api.post(`/jobs/${job.id}/failed`, { leaseToken: job.leaseToken });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ in: 'body', path: '/error', message: '"error" is required: say what went wrong' }]);
  });
});

describe('POST /jobs/reports', () => {
  it('applies many reports at once, each answered with the status its single report would have', async () => {
    await api.post('/jobs/batch', { jobs: Array.from({ length: 4 }, () => ({ type: 't', maxAttempts: 2 })) });
    const [a, b, c, d] = await api.lease({ worker: 'w1', limit: 4 });
    await api.post(`/jobs/${c!.id}/finished`, { leaseToken: c!.leaseToken });
    clock.advance(100);
    const res = await api.post('/jobs/reports', {
      reports: [
        { id: a!.id, leaseToken: a!.leaseToken, outcome: 'finished', result: { ok: true } },
        { id: b!.id, leaseToken: b!.leaseToken, outcome: 'failed', error: 'boom', retryIn: '1m' },
        { id: c!.id, leaseToken: c!.leaseToken, outcome: 'finished' },
        { id: d!.id, leaseToken: WRONG_TOKEN, outcome: 'finished' },
        { id: '424242', leaseToken: a!.leaseToken, outcome: 'finished' },
        { id: 'not-an-id', leaseToken: a!.leaseToken, outcome: 'failed', error: 'x' },
        { id: c!.id, leaseToken: c!.leaseToken, outcome: 'failed', error: 'contradicts' },
      ],
      returnJobs: true,
    });
    expect(res.status).toBe(200);
    const results = res.body.results;
    expect(results.map((r: any) => [r.id, r.status])).toEqual([
      [a!.id, 200],
      [b!.id, 200],
      [c!.id, 200],
      [d!.id, 409],
      ['424242', 404],
      ['not-an-id', 404],
      [c!.id, 409],
    ]);
    expect(results[0].job).toMatchObject({ state: 'finished', result: { ok: true }, finishedAt: at(100) });
    expect(results[1].job).toMatchObject({ state: 'queued', error: 'boom', runAt: at(60_100) });
    expect(results[2].job.state).toBe('finished');
    expect(results[3]).not.toHaveProperty('job');
    expect(results[3].detail).toMatch(/lease was lost/);
    expect((await api.get(`/jobs/${d!.id}`)).body.state).toBe('running');
  });

  it('answers id and status only unless returnJobs is true', async () => {
    await api.post('/jobs/batch', { jobs: Array.from({ length: 3 }, () => ({ type: 't', maxAttempts: 1 })) });
    const [a, b, c] = await api.lease({ worker: 'w1', limit: 3 });
    const res = await api.post('/jobs/reports', {
      reports: [
        { id: a!.id, leaseToken: a!.leaseToken, outcome: 'finished', result: { ok: 1 } },
        { id: b!.id, leaseToken: b!.leaseToken, outcome: 'failed', error: 'last try' },
        { id: c!.id, leaseToken: WRONG_TOKEN, outcome: 'finished' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.results[0]).toEqual({ id: a!.id, status: 200 });
    expect(res.body.results[1]).toEqual({ id: b!.id, status: 200 });
    expect(res.body.results[2]).toMatchObject({ id: c!.id, status: 409, detail: expect.stringMatching(/lease was lost/) });
    expect(res.body.results[2]).not.toHaveProperty('job');
    expect((await api.get(`/jobs/${a!.id}`)).body).toMatchObject({ state: 'finished', result: { ok: 1 } });
    expect((await api.get(`/jobs/${b!.id}`)).body).toMatchObject({ state: 'failed', error: 'last try' });
    // repeating a report with the same token is still recognised
    const again = await api.post('/jobs/reports', {
      reports: [{ id: a!.id, leaseToken: a!.leaseToken, outcome: 'finished' }],
      returnJobs: false,
    });
    expect(again.body.results).toEqual([{ id: a!.id, status: 200 }]);
    expect(
      (await api.post('/jobs/reports', { reports: [{ id: a!.id, leaseToken: a!.leaseToken, outcome: 'finished' }], returnJobs: 1 })).status,
    ).toBe(400);
  });

  it('refuses a bad report, naming its index', async () => {
    const token = WRONG_TOKEN;
    const res = await api.post('/jobs/reports', {
      reports: [
        { id: '1', leaseToken: token, outcome: 'finished' },
        { id: '2', leaseToken: token, outcome: 'finished', error: 'no' },
        { id: '3', leaseToken: token, outcome: 'done' },
        { id: '4', leaseToken: token, outcome: 'failed', result: 1 },
      ],
    });
    expect(res.status).toBe(400);
    // a failed report without error is refused, as POST /jobs/{id}/failed refuses it
    expect(res.body.errors.map((e: any) => e.path)).toEqual([
      '/reports/1/error',
      '/reports/2/outcome',
      '/reports/3/error',
      '/reports/3/result',
    ]);
    expect((await api.post('/jobs/reports', { reports: [] })).status).toBe(400);
  });

  it('commits the reports of concurrent single requests together', async () => {
    await api.post('/jobs/batch', { jobs: Array.from({ length: 40 }, () => ({ type: 't' })) });
    const jobs = await api.lease({ worker: 'w1', limit: 40 });
    const completer = api.stack.services.workers.completer;
    const before = { ...completer.stats };
    let sent: Promise<{ status: number; body: any }>[] = [];
    await holdingJobTable(tdb.db, async () => {
      sent = jobs.map((j) => api.post(`/jobs/${j.id}/finished`, { leaseToken: j.leaseToken }));
      await until(() => completer.stats.items - before.items + completer.pending === 40, 'all 40 reports at the completer');
    });
    const answers = await Promise.all(sent);
    expect(answers.every((r) => r.status === 200 && r.body.state === 'finished')).toBe(true);
    expect(completer.stats.items - before.items).toBe(40);
    // the statements blocked by the lock, then one for everything that queued behind them
    expect(completer.stats.statements - before.statements).toBeLessThanOrEqual(completer.options.maxInFlight + 1);
  });
});

describe('many workers at once', () => {
  it('never hands one job to two leases when 20 workers lease 500 jobs in parallel', async () => {
    await api.post('/jobs/batch', { jobs: Array.from({ length: 500 }, (_, i) => ({ type: 'c', args: { i } })) });
    const seen: string[] = [];
    await Promise.all(
      Array.from({ length: 20 }, async (_, w) => {
        for (;;) {
          const jobs = await api.lease({ worker: `w${w}`, limit: 1 + (w % 4) });
          if (jobs.length === 0) return;
          seen.push(...jobs.map((j) => j.id));
        }
      }),
    );
    expect(seen).toHaveLength(500);
    expect(new Set(seen).size).toBe(500);
    const { rows } = await tdb.db.pool.query(`SELECT count(*) AS n FROM job WHERE state = 'running' AND attempts = 1`);
    expect(Number(rows[0].n)).toBe(500);
  });

  it('shares one claim among lease requests that arrive together', async () => {
    await api.post('/jobs/batch', { jobs: Array.from({ length: 30 }, () => ({ type: 's' })) });
    const leaser = api.stack.services.workers.leaser;
    const before = { ...leaser.stats };
    let sent: Promise<Record<string, any>[]>[] = [];
    await holdingJobTable(tdb.db, async () => {
      sent = Array.from({ length: 30 }, (_, i) => api.lease({ worker: `w${i}` }));
      await until(() => leaser.stats.requests - before.requests + leaser.pending === 30, 'all 30 lease requests at the combiner');
    });
    const answers = await Promise.all(sent);
    const got = answers.flat();
    expect(new Set(got.map((j) => j.id)).size).toBe(30);
    got.forEach((j) => expect(answers.findIndex((a) => a.includes(j))).toBe(Number(j.worker.slice(1))));
    expect(leaser.stats.requests - before.requests).toBe(30);
    expect(leaser.stats.statements - before.statements).toBeLessThanOrEqual(leaser.options.maxInFlight + 1);
  });
});

describe('a worker that goes away while its claim runs', () => {
  it('gets nothing, and the jobs claimed for it are queued again with the attempt not counted', async () => {
    const job = await api.create({ type: 'gone' });
    const aborted = AbortSignal.abort();
    expect(await api.stack.services.workers.next({ worker: 'gone-worker', types: ['gone'] }, aborted)).toEqual([]);
    const after = (await api.get(`/jobs/${job.id}`)).body;
    expect(after).toMatchObject({ state: 'queued', attempts: 0, worker: null, startedAt: null, leaseExpiresAt: null });
    expect(await api.lease({ worker: 'next', types: ['gone'] })).toHaveLength(1);
  });

  it('clears the lastRun its lease set, so the job is not dropped when it is leased again', async () => {
    await insertTask(tdb.db, { id: 'gone-task', lastRun: null });
    const id = await insertTaskJob(tdb.db, { taskId: 'gone-task', runAt: clock.now() });
    expect(await api.stack.services.workers.next({ worker: 'w', types: ['task.gone-task'] }, AbortSignal.abort())).toEqual([]);
    const { rows } = await tdb.db.pool.query('SELECT last_run FROM periodic_task WHERE id = $1', ['gone-task']);
    expect(rows[0].last_run).toBeNull();
    const again = await api.lease({ worker: 'w2', types: ['task.gone-task'] });
    expect(again.map((j) => j.id)).toEqual([id]);
  });
});
