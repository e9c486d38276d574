/** Jobs over HTTP: producers, readers and managers (the worker protocol is in jobs-worker.test.ts). */
import request from 'supertest';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { bearer, TOKENS } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { holdingJobTable, insertTask, insertTaskJob, type JobsApi, jobsApi, until } from './jobs-support.js';
import { useJobsApi } from '../support/fixture.js';

const T0 = '2026-11-20T09:00:00.000Z';
const API_FIELDS = [
  'id',
  'type',
  'group',
  'args',
  'subject',
  'submitter',
  'priority',
  'state',
  'runAt',
  'attempts',
  'maxAttempts',
  'uniqueKey',
  'periodicTaskId',
  'worker',
  'startedAt',
  'leaseExpiresAt',
  'deadline',
  'finishedAt',
  'progress',
  'result',
  'error',
  'createdAt',
  'updatedAt',
];
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let tdb: TestDatabase;
let api: JobsApi;
const clock = new ManualClock(T0);

useJobsApi({ clock }, (f) => ({ tdb, api } = f));
beforeEach(async () => {
  clock.set(T0);
  await tdb.db.pool.query('DELETE FROM job');
  await tdb.db.pool.query('DELETE FROM periodic_task');
});

const count = async (where = 'true') => Number((await tdb.db.pool.query(`SELECT count(*) AS n FROM job WHERE ${where}`)).rows[0].n);

describe('POST /jobs', () => {
  it('creates a queued job with the fields and defaults API.md promises', async () => {
    const res = await api.post('/jobs', { type: 'mail.send' });
    expect(res.status).toBe(201);
    const job = res.body;
    for (const f of API_FIELDS) expect(job).toHaveProperty(f);
    expect(job).toMatchObject({
      type: 'mail.send',
      group: 'default',
      args: null,
      priority: 0,
      state: 'queued',
      runAt: T0,
      attempts: 0,
      maxAttempts: 3,
      uniqueKey: null,
      periodicTaskId: null,
      worker: null,
      startedAt: null,
      leaseExpiresAt: null,
      deadline: null,
      finishedAt: null,
      createdAt: T0,
      updatedAt: T0,
    });
    expect(job.id).toMatch(/^\d+$/);
    expect(typeof job.id).toBe('string');
    for (const f of ['runAt', 'createdAt', 'updatedAt']) expect(job[f]).toMatch(ISO_MS);
    expect((await api.get(`/jobs/${job.id}`)).body).toEqual(job);
  });

  it('keeps every field the producer set', async () => {
    const body = {
      type: 'report.render',
      args: { report: 42, pages: [1, 2], nested: { deep: true } },
      group: 'reports',
      priority: -7,
      runAt: '2026-11-20T10:00:00+01:00',
      maxAttempts: 5,
      uniqueKey: 'report:42',
      timebox: 'PT90S',
      subject: 'monthly report',
      submitter: 'billing',
    };
    const res = await api.post('/jobs', body);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ ...body, runAt: '2026-11-20T09:00:00.000Z', timebox: '1m30s' });
  });

  it('returns the open job with 200 when its uniqueKey is taken', async () => {
    const first = await api.post('/jobs', { type: 'a', uniqueKey: 'k1', args: { n: 1 } });
    const second = await api.post('/jobs', { type: 'b', uniqueKey: 'k1', args: { n: 2 } });
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(await count()).toBe(1);
  });

  it('creates a new job for a uniqueKey whose holder is final', async () => {
    const first = await api.create({ type: 'a', uniqueKey: 'k2' });
    expect((await api.post(`/jobs/${first.id}/cancel`)).status).toBe(200);
    const second = await api.post('/jobs', { type: 'a', uniqueKey: 'k2' });
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.id);
  });

  it('creates exactly one job when 20 producers race with one uniqueKey', async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => api.post('/jobs', { type: 'race', uniqueKey: 'same', args: { i } })),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(19);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(await count()).toBe(1);
  });

  it('inserts the jobs of concurrent requests together, each answered with its own job', async () => {
    const inserter = api.stack.services.jobs.inserter;
    const before = { ...inserter.stats };
    let sent: Promise<{ status: number; body: any }>[] = [];
    await holdingJobTable(tdb.db, async () => {
      sent = Array.from({ length: 30 }, (_, i) => api.post('/jobs', { type: 'together', args: { i } }));
      await until(() => inserter.stats.items - before.items + inserter.pending === 30, 'all 30 creations at the inserter');
    });
    const answers = await Promise.all(sent);
    answers.forEach((r, i) => {
      expect(r.status).toBe(201);
      expect(r.body.args).toEqual({ i });
    });
    expect(new Set(answers.map((r) => r.body.id)).size).toBe(30);
    expect(inserter.stats.items - before.items).toBe(30);
    // the statements blocked by the lock, then one for everything that queued behind them
    expect(inserter.stats.statements - before.statements).toBeLessThanOrEqual(inserter.options.maxInFlight + 1);
  });

  it('refuses read-only fields, saying they are read-only', async () => {
    const res = await api.post('/jobs', { type: 'a', state: 'running', id: '7', attempts: 2 });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        { in: 'body', path: '/state', message: '"state" is read-only' },
        { in: 'body', path: '/id', message: '"id" is read-only' },
        { in: 'body', path: '/attempts', message: '"attempts" is read-only' },
      ]),
    );
    expect(await count()).toBe(0);
  });

  it('refuses unknown fields and reports every bad field at once', async () => {
    const res = await api.post('/jobs', { type: '', colour: 'red' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        { in: 'body', path: '/colour', message: 'unknown field "colour"' },
        { in: 'body', path: '/type', message: 'type must not be empty' },
      ]),
    );
  });

  it('refuses names longer than 200 characters and accepts 200', async () => {
    const long = 'x'.repeat(201);
    for (const field of ['type', 'group', 'uniqueKey']) {
      const res = await api.post('/jobs', { type: 't', [field]: long });
      expect(res.status, field).toBe(400);
      expect(res.body.errors[0].path).toBe(`/${field}`);
    }
    expect((await api.post('/jobs', { type: 'x'.repeat(200), group: 'g'.repeat(200), uniqueKey: 'u'.repeat(200) })).status).toBe(201);
  });

  it('takes durations only as duration strings', async () => {
    for (const timebox of [30, '30', 'abc', '-5s', '0s', true]) {
      const res = await api.post('/jobs', { type: 't', timebox });
      expect(res.status, String(timebox)).toBe(400);
      expect(res.body.errors[0].path).toBe('/timebox');
    }
    expect((await api.post('/jobs', { type: 't', timebox: '1h30m' })).body.timebox).toBe('1h30m');
  });

  it('refuses timestamps without a zone, bad priorities and attempts', async () => {
    for (const body of [
      { runAt: '2026-11-20T09:00:00' },
      { runAt: 'tomorrow' },
      { runAt: 1763629200000 },
      { priority: 1.5 },
      { priority: 2 ** 31 },
      { maxAttempts: 0 },
      { args: undefined, type: 5 },
    ]) {
      const res = await api.post('/jobs', { type: 't', ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.status).toBe(400);
    }
    const missing = await api.post('/jobs', { args: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0].path).toBe('/type');
  });
});

describe('POST /jobs/batch', () => {
  it('creates 1000 jobs in one request, answered in the order given', async () => {
    const jobs = Array.from({ length: 1000 }, (_, i) => ({ type: 'bulk', args: { i }, priority: i % 3 }));
    const res = await api.post('/jobs/batch', { jobs });
    expect(res.status).toBe(201);
    expect(res.body.jobs).toHaveLength(1000);
    res.body.jobs.forEach((j: any, i: number) => expect(j).toMatchObject({ type: 'bulk', args: { i }, priority: i % 3, state: 'queued' }));
    const ids = res.body.jobs.map((j: any) => Number(j.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(await count()).toBe(1000);
    // the answer is what the database holds
    const stored = (await api.get(`/jobs/${res.body.jobs[500].id}`)).body;
    expect(stored).toEqual(res.body.jobs[500]);
  });

  it('rejects the whole batch when one job is bad, naming its index', async () => {
    const jobs = [{ type: 'ok' }, { type: 'ok' }, { type: 'ok' }, { type: '' }, { type: 'ok', state: 'finished' }];
    const res = await api.post('/jobs/batch', { jobs });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([
      { in: 'body', path: '/jobs/3/type', message: 'type must not be empty' },
      { in: 'body', path: '/jobs/4/state', message: '"state" is read-only' },
    ]);
    expect(await count()).toBe(0);
  });

  it('refuses an empty batch, more than 1000 jobs and unknown fields beside jobs', async () => {
    expect((await api.post('/jobs/batch', { jobs: [] })).status).toBe(400);
    expect((await api.post('/jobs/batch', { jobs: Array.from({ length: 1001 }, () => ({ type: 't' })) })).status).toBe(400);
    expect((await api.post('/jobs/batch', { jobs: [{ type: 't' }], extra: 1 })).status).toBe(400);
    expect(await count()).toBe(0);
  });

  it('answers a taken uniqueKey with the open job, also when the batch repeats a key', async () => {
    const holder = await api.create({ type: 'a', uniqueKey: 'held' });
    const res = await api.post('/jobs/batch', {
      jobs: [{ type: 'b', uniqueKey: 'held' }, { type: 'c', uniqueKey: 'fresh' }, { type: 'd', uniqueKey: 'fresh' }, { type: 'e' }],
    });
    expect(res.status).toBe(201);
    const [a, b, c, d] = res.body.jobs;
    expect(a).toEqual(holder);
    expect(b.type).toBe('c');
    expect(c).toEqual(b);
    expect(d.type).toBe('e');
    expect(await count()).toBe(3);
  });
});

describe('GET /jobs', () => {
  it('lists newest first and pages with an opaque cursor', async () => {
    const created = (await api.post('/jobs/batch', { jobs: Array.from({ length: 25 }, (_, i) => ({ type: 'p', args: { i } })) })).body.jobs;
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: any = await api.get(`/jobs?limit=10${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((j: any) => j.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(created.map((j: any) => j.id).reverse());
  });

  it('answers 100 jobs by default and no cursor on the last page', async () => {
    await api.post('/jobs/batch', { jobs: Array.from({ length: 101 }, () => ({ type: 'p' })) });
    const first = await api.get('/jobs');
    expect(first.body.items).toHaveLength(100);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const last = await api.get(`/jobs?cursor=${first.body.nextCursor}`);
    expect(last.body.items).toHaveLength(1);
    expect(last.body.nextCursor).toBeNull();
  });

  it('filters by state, type, group, periodicTaskId and worker', async () => {
    await insertTask(tdb.db, { id: 'nightly' });
    const taskJob = await insertTaskJob(tdb.db, { taskId: 'nightly', runAt: new Date(T0), type: 'report' });
    const a = await api.create({ type: 'mail', group: 'g1' });
    const b = await api.create({ type: 'mail', group: 'g2' });
    await api.create({ type: 'sms', group: 'g1' });
    const [leased] = await api.lease({ worker: 'w-9', types: ['mail'], groups: ['g2'] });
    expect(leased!.id).toBe(b.id);
    const ids = async (q: string) => (await api.get(`/jobs?${q}`)).body.items.map((j: any) => j.id);
    expect(await ids('type=mail')).toEqual([b.id, a.id]);
    expect(await ids('group=g1&type=mail')).toEqual([a.id]);
    expect(await ids('state=running')).toEqual([b.id]);
    expect(await ids('worker=w-9')).toEqual([b.id]);
    expect(await ids('periodicTaskId=nightly')).toEqual([taskJob]);
    expect(await ids('state=failed')).toEqual([]);
  });

  it('searches args, subject and error with q, case-insensitively and literally', async () => {
    const inArgs = await api.create({ type: 't', args: { to: 'Ada@Example.com' } });
    const inSubject = await api.create({ type: 't', subject: 'Welcome ADA' });
    const percent = await api.create({ type: 't', subject: '100% done' });
    const under = await api.create({ type: 't', subject: 'snake_case' });
    await api.create({ type: 't', subject: 'snakeXcase 100 percent' });
    const failed = await api.create({ type: 'f', maxAttempts: 1 });
    const [lease] = await api.lease({ worker: 'w', types: ['f'] });
    await api.post(`/jobs/${failed.id}/failed`, { leaseToken: lease!.leaseToken, error: { message: 'SMTP refused ada' } });
    const ids = async (q: string) => (await api.get(`/jobs?q=${encodeURIComponent(q)}`)).body.items.map((j: any) => j.id).sort();
    expect(await ids('ada')).toEqual([inArgs.id, inSubject.id, failed.id].sort());
    expect(await ids('100%')).toEqual([percent.id]);
    expect(await ids('_case')).toEqual([under.id]);
    expect(await ids('smtp')).toEqual([failed.id]);
  });

  it('refuses unknown query parameters, unknown values and page sizes out of range', async () => {
    for (const q of [
      'foo=1',
      'limit=-1',
      'limit=0',
      'limit=1001',
      'limit=ten',
      'state=sleeping',
      'cursor=not-a-cursor',
      'limit=1&limit=2',
    ]) {
      const res = await api.get(`/jobs?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.type).toMatch(/^urn:jobclock:problem:/);
    }
    const res = await api.get('/jobs?foo=1');
    expect(res.body.errors).toEqual([{ in: 'query', path: '/foo', message: 'unknown query parameter "foo"' }]);
  });
});

describe('GET /jobs/{id}', () => {
  it('answers 404 for an unknown or malformed id', async () => {
    for (const id of ['999999', 'abc', '0', '-1', '99999999999999999999999']) {
      const res = await api.get(`/jobs/${id}`);
      expect(res.status, id).toBe(404);
      expect(res.body.type).toBe('urn:jobclock:problem:not-found');
    }
  });
});

describe('PATCH /jobs/{id}', () => {
  it('changes the priority and runAt of a queued job', async () => {
    const job = await api.create({ type: 't' });
    clock.advance(1000);
    const res = await api.patch(`/jobs/${job.id}`, { priority: 9, runAt: '2026-11-21T00:00:00Z' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ priority: 9, runAt: '2026-11-21T00:00:00.000Z', updatedAt: '2026-11-20T09:00:01.000Z' });
    expect((await api.patch(`/jobs/${job.id}`, {})).body.priority).toBe(9);
  });

  it('answers 409 for a job that is not queued and 404 for none', async () => {
    const job = await api.create({ type: 't' });
    await api.lease({ worker: 'w' });
    const res = await api.patch(`/jobs/${job.id}`, { priority: 1 });
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/is running/);
    expect((await api.patch('/jobs/424242', { priority: 1 })).status).toBe(404);
  });

  it('refuses fields other than priority and runAt', async () => {
    const job = await api.create({ type: 't' });
    const res = await api.patch(`/jobs/${job.id}`, { type: 'other', state: 'finished' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([
      { in: 'body', path: '/type', message: '"type" cannot be changed after creation; only priority and runAt can' },
      { in: 'body', path: '/state', message: '"state" is read-only' },
    ]);
  });
});

describe('POST /jobs/{id}/cancel', () => {
  it('cancels a queued job', async () => {
    const job = await api.create({ type: 't' });
    clock.advance(500);
    const res = await api.post(`/jobs/${job.id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'cancelled', finishedAt: '2026-11-20T09:00:00.500Z' });
    expect(await api.lease({ worker: 'w' })).toEqual([]);
  });

  it('cancels a running job', async () => {
    await api.create({ type: 't' });
    const [job] = await api.lease({ worker: 'w' });
    const res = await api.post(`/jobs/${job!.id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body.state).toBe('cancelled');
  });

  it('answers 409 for a final job and 404 for none', async () => {
    const job = await api.create({ type: 't' });
    await api.post(`/jobs/${job.id}/cancel`);
    const again = await api.post(`/jobs/${job.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/is cancelled; cancelling needs a job that is queued or running/);
    expect((await api.post('/jobs/424242/cancel')).status).toBe(404);
  });
});

describe('POST /jobs/{id}/retry', () => {
  it('queues a failed job again, runnable now, with its attempts reset', async () => {
    const job = await api.create({ type: 't', maxAttempts: 1 });
    const [l] = await api.lease({ worker: 'w' });
    await api.post(`/jobs/${job.id}/failed`, { leaseToken: l!.leaseToken, error: 'boom' });
    clock.advance(60_000);
    const res = await api.post(`/jobs/${job.id}/retry`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      state: 'queued',
      attempts: 0,
      runAt: '2026-11-20T09:01:00.000Z',
      finishedAt: null,
      worker: null,
      startedAt: null,
      error: 'boom',
    });
    const [again] = await api.lease({ worker: 'w2' });
    expect(again).toMatchObject({ id: job.id, attempts: 1, worker: 'w2' });
  });

  it('queues cancelled and dropped jobs again', async () => {
    const cancelled = await api.create({ type: 't' });
    await api.post(`/jobs/${cancelled.id}/cancel`);
    expect((await api.post(`/jobs/${cancelled.id}/retry`)).body.state).toBe('queued');
    await insertTask(tdb.db, { id: 'tk', lastRun: new Date(T0) });
    const dropped = await insertTaskJob(tdb.db, { taskId: 'tk', runAt: new Date(T0) });
    await api.lease({ worker: 'w', types: ['task.tk'] });
    expect((await api.get(`/jobs/${dropped}`)).body.state).toBe('dropped');
    expect((await api.post(`/jobs/${dropped}/retry`)).body.state).toBe('queued');
  });

  it('answers 409 for queued, running and finished jobs, and 404 for none', async () => {
    const queued = await api.create({ type: 'q' });
    expect((await api.post(`/jobs/${queued.id}/retry`)).status).toBe(409);
    await api.create({ type: 'r' });
    const [running] = await api.lease({ worker: 'w', types: ['r'] });
    expect((await api.post(`/jobs/${running!.id}/retry`)).status).toBe(409);
    await api.post(`/jobs/${running!.id}/finished`, { leaseToken: running!.leaseToken });
    const finished = await api.post(`/jobs/${running!.id}/retry`);
    expect(finished.status).toBe(409);
    expect(finished.body.detail).toMatch(/is finished; retrying needs a job that is failed, dropped or cancelled/);
    expect((await api.post('/jobs/424242/retry')).status).toBe(404);
  });

  it('answers 409 when another open job now holds its uniqueKey', async () => {
    const old = await api.create({ type: 't', uniqueKey: 'once' });
    await api.post(`/jobs/${old.id}/cancel`);
    await api.create({ type: 't', uniqueKey: 'once' });
    const res = await api.post(`/jobs/${old.id}/retry`);
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/uniqueKey/);
  });
});

describe('access', () => {
  let secured: JobsApi;
  beforeAll(async () => {
    secured = await jobsApi({ db: tdb.db, clock, tokens: TOKENS, instanceId: 'secured' });
  });
  afterAll(async () => secured?.stack.close());

  it('answers 401 without a token or with an unknown one', async () => {
    expect((await secured.get('/jobs')).status).toBe(401);
    expect((await secured.get('/jobs', 'Bearer nobody-knows-this-token')).status).toBe(401);
  });

  it('lets each role do what API.md gives it and answers 403 otherwise', async () => {
    const job = (await secured.post('/jobs', { type: 't' }, bearer('producer'))).body;
    const token = '3f1c2b9e-8d4a-4c6b-9a51-2b7e0c1d5f00';
    const routes: [string, (auth: string) => Promise<{ status: number }>, string[]][] = [
      ['create', async (a) => secured.post('/jobs', { type: 't' }, a), ['admin', 'producer']],
      ['batch', async (a) => secured.post('/jobs/batch', { jobs: [{ type: 'x' }] }, a), ['admin', 'producer']],
      ['list', async (a) => secured.get('/jobs', a), ['admin', 'worker', 'producer', 'reader']],
      ['get', async (a) => secured.get(`/jobs/${job.id}`, a), ['admin', 'worker', 'producer', 'reader']],
      ['lease', async (a) => secured.post('/jobs/next', { worker: 'w', types: ['none'] }, a), ['admin', 'worker']],
      ['heartbeat', async (a) => secured.post(`/jobs/${job.id}/heartbeat`, { leaseToken: token }, a), ['admin', 'worker']],
      ['finished', async (a) => secured.post(`/jobs/${job.id}/finished`, { leaseToken: token }, a), ['admin', 'worker']],
      ['failed', async (a) => secured.post(`/jobs/${job.id}/failed`, { leaseToken: token, error: 'x' }, a), ['admin', 'worker']],
      [
        'reports',
        async (a) => secured.post('/jobs/reports', { reports: [{ id: job.id, leaseToken: token, outcome: 'finished' }] }, a),
        ['admin', 'worker'],
      ],
      ['patch', async (a) => secured.patch(`/jobs/${job.id}`, { priority: 1 }, a), ['admin']],
    ];
    for (const [name, call, allowed] of routes) {
      for (const role of ['admin', 'worker', 'producer', 'reader'] as const) {
        const res = await call(bearer(role));
        if (allowed.includes(role)) {
          expect([401, 403], `${role} ${name}`).not.toContain(res.status);
          expect(res.status, `${role} ${name}`).toBeLessThan(500);
        } else expect(res.status, `${role} ${name}`).toBe(403);
      }
    }
    for (const path of [`/jobs/${job.id}/cancel`, `/jobs/${job.id}/retry`]) {
      expect((await secured.post(path, undefined, bearer('worker'))).status).toBe(403);
      expect((await secured.post(path, undefined, bearer('producer'))).status).toBe(403);
      expect((await secured.post(path, undefined, bearer('reader'))).status).toBe(403);
    }
  });
});

describe('POST /jobs/batch with Prefer: return=minimal', () => {
  it('answers the new jobs ids only, in order, and says the preference was applied', async () => {
    const res = await request(api.stack.app.server)
      .post('/jobs/batch')
      .set('authorization', bearer('admin'))
      .set('prefer', 'respond-async, return=minimal')
      .send({ jobs: [{ type: 'minimal.a' }, { type: 'minimal.b', args: { n: 2 } }] });
    expect(res.status).toBe(201);
    expect(res.headers['preference-applied']).toBe('return=minimal');
    expect(res.body).toEqual({ jobs: [{ id: expect.any(String) }, { id: expect.any(String) }] });
    const [a, b] = res.body.jobs as { id: string }[];
    expect((await api.get(`/jobs/${a!.id}`)).body).toMatchObject({ type: 'minimal.a', state: 'queued' });
    expect((await api.get(`/jobs/${b!.id}`)).body).toMatchObject({ type: 'minimal.b', args: { n: 2 } });
  });

  it('answers whole jobs for any other preference', async () => {
    for (const prefer of ['return=representation', 'return=minimally', 'handling=strict']) {
      const res = await request(api.stack.app.server)
        .post('/jobs/batch')
        .set('authorization', bearer('admin'))
        .set('prefer', prefer)
        .send({ jobs: [{ type: 'minimal.c' }] });
      expect(res.status).toBe(201);
      expect(res.headers['preference-applied']).toBeUndefined();
      expect(res.body.jobs[0]).toMatchObject({ type: 'minimal.c', state: 'queued' });
    }
  });
});
