import request from 'supertest';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createTestStack, type TestStack } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { useTestStack } from '../support/fixture.js';

const T0 = '2026-11-20T00:00:00.000Z';
let tdb: TestDatabase;
let stack: TestStack;
const clock = new ManualClock(T0);

const api = () => request(stack.app.server);
const create = (body: Record<string, unknown>) => api().post('/periodic-tasks').send(body);

useTestStack({ clock, listen: false }, (f) => ({ tdb, stack } = f));
beforeEach(async () => {
  clock.set(T0);
  await tdb.db.pool.query('delete from job');
  await tdb.db.pool.query('delete from periodic_task');
});

describe('POST /periodic-tasks', () => {
  it('creates a task with defaults and the first run one interval after creation', async () => {
    const res = await create({ id: 'poll-1', task: 'mail.poll', schedule: 'every 6m offset 1m' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: 'poll-1',
      task: 'mail.poll',
      group: 'default',
      args: null,
      subject: null,
      submitter: null,
      priority: 0,
      owner: null,
      enabled: true,
      schedule: 'every 6m offset 1m',
      timezone: 'UTC',
      firstRunAt: null,
      tolerance: null,
      timebox: null,
      concurrencyPolicy: 'forbid',
      misfirePolicy: 'coalesce',
      catchUpLimit: 10,
      maxAttempts: 1,
      catchUpWindow: null,
      endAt: null,
      alertAfter: null,
      health: { status: 'ok', lastSuccessAt: null, lastFailureAt: null, consecutiveFailures: 0 },
      effectiveTolerance: '5s',
      effectiveTimebox: '3m',
      nextRun: '2026-11-20T00:07:00.000Z',
      lastRun: null,
      worker: null,
      marked: null,
      state: null,
      createdAt: T0,
      updatedAt: T0,
    });
  });

  it('stores every writable field as given', async () => {
    const body = {
      id: 'a.b_c:d-e',
      task: 'report',
      group: 'reports',
      args: { channel: 42, tags: ['x'], nested: { ok: true } },
      subject: 'Weekly report',
      submitter: 'alice',
      priority: 7,
      owner: 'channel:42',
      enabled: true,
      schedule: 'Mon..Fri *-*-* 09:00',
      timezone: 'Europe/Berlin',
      firstRunAt: '2026-12-01T00:00:00.000Z',
      tolerance: 'PT30S',
      timebox: '1h30m',
      concurrencyPolicy: 'allow',
    };
    const res = await create(body);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      ...body,
      tolerance: '30s',
      timebox: '1h30m',
      effectiveTolerance: '30s',
      effectiveTimebox: '1h30m',
      nextRun: '2026-12-01T08:00:00.000Z', // Tuesday 09:00 in Berlin, not before firstRunAt
    });
    const got = await api().get('/periodic-tasks/a.b_c:d-e');
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('generates an id when none is given', async () => {
    const res = await create({ task: 't', schedule: 'every 1h' });
    expect(res.status).toBe(201);
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers 409 when the id exists', async () => {
    expect((await create({ id: 'dup', task: 't', schedule: 'every 1h' })).status).toBe(201);
    const res = await create({ id: 'dup', task: 'other', schedule: 'every 2h' });
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/"dup" already exists/);
    expect((await api().get('/periodic-tasks/dup')).body.task).toBe('t');
  });

  it('shows the default timebox of a cron schedule as half the time to the following occurrence', async () => {
    const res = await create({ id: 'c', task: 't', schedule: '*/10 * * * *' });
    expect(res.body).toMatchObject({ nextRun: '2026-11-20T00:00:00.000Z', effectiveTimebox: '5m', effectiveTolerance: '5s' });
  });

  it('starts an interval with firstRunAt at firstRunAt', async () => {
    const res = await create({ id: 'f', task: 't', schedule: 'every 100m', firstRunAt: '2026-11-20T00:30:00Z' });
    expect(res.body).toMatchObject({ nextRun: '2026-11-20T00:30:00.000Z', firstRunAt: '2026-11-20T00:30:00.000Z' });
  });

  it('creates a disabled task without a next run', async () => {
    const res = await create({ id: 'off', task: 't', schedule: 'every 1h', enabled: false });
    expect(res.body).toMatchObject({ enabled: false, nextRun: null });
  });

  it.each([
    [{ task: 't', schedule: 'every 5 minutes' }, '/schedule', /./],
    [{ task: 't', schedule: '61 * * * *' }, '/schedule', /61/],
    [{ task: 't', schedule: 'every 500ms' }, '/schedule', /at least 1s/],
    [{ task: 't', schedule: '0 0 30 2 *' }, '/schedule', /never fires/],
    [{ task: 't', schedule: 'daily', timezone: 'Mars/Olympus' }, '/timezone', /unknown time zone/],
    [{ task: 't', schedule: 'every 10s', tolerance: '10s' }, '/tolerance', /below the interval/],
    [{ task: 't', schedule: '* * * * *', tolerance: '2m' }, '/tolerance', /below the interval/],
    [{ task: 't', schedule: 'every 10s', tolerance: 'soon' }, '/tolerance', /soon/],
    [{ task: 't', schedule: 'every 10s', timebox: '0s' }, '/timebox', /longer than 0/],
    [{ task: 't', schedule: 'every 10s', firstRunAt: 'tomorrow' }, '/firstRunAt', /ISO 8601/],
    [{ task: 't', schedule: 'every 10s', concurrencyPolicy: 'sometimes' }, '/concurrencyPolicy', /./],
    [{ task: 't', schedule: 'every 10s', priority: 1.5 }, '/priority', /whole number/],
    [{ task: 't', schedule: 'every 10s', id: 'has space' }, '/id', /A-Z/],
    [{ task: 't', schedule: 'every 10s', id: 'x'.repeat(201) }, '/id', /./],
    [{ task: 'x'.repeat(201), schedule: 'every 10s' }, '/task', /longer than 200/],
    [{ task: 't', schedule: 'every 10s', owner: 'o'.repeat(201) }, '/owner', /longer than 200/],
    [{ task: '', schedule: 'every 10s' }, '/task', /empty/],
    [{ schedule: 'every 10s' }, '/task', /./],
    [{ task: 't' }, '/schedule', /./],
    [{ task: 't', schedule: 'every 10s', color: 'red' }, '/color', /unknown field/],
    [{ task: 't', schedule: 'every 10s', nextRun: T0 }, '/nextRun', /"nextRun" is read-only/],
    [{ task: 't', schedule: 'every 10s', effectiveTimebox: '1s' }, '/effectiveTimebox', /read-only/],
  ])('refuses %j with a 400 naming %s', async (body, path, message) => {
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const paths = (res.body.errors ?? []).map((e: { path: string }) => e.path);
    expect(paths).toContain(path);
    const error = res.body.errors.find((e: { path: string }) => e.path === path);
    expect(error.message).toMatch(message);
  });

  it('reports every bad timing field at once', async () => {
    const res = await create({ task: 't', schedule: 'every 1x', timezone: 'Nowhere/City', timebox: '-1s' });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['/schedule', '/timebox', '/timezone']);
  });
});

describe('GET /periodic-tasks', () => {
  beforeEach(async () => {
    for (let i = 0; i < 7; i++) {
      await create({
        id: `t${i}`,
        task: i % 2 === 0 ? 'even' : 'odd',
        owner: i < 3 ? 'channel:1' : 'channel:2',
        enabled: i !== 4,
        schedule: 'every 1h',
      }).expect(201);
    }
  });

  it('pages through all tasks in id order with the cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: request.Response = await api()
        .get('/periodic-tasks')
        .query({ limit: 3, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((t: { id: string }) => t.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6']);
  });

  it('says there is no next page when the last page is full', async () => {
    const res = await api().get('/periodic-tasks').query({ limit: 7 });
    expect(res.body.items).toHaveLength(7);
    expect(res.body.nextCursor).toBeNull();
  });

  it('filters by owner, task and enabled', async () => {
    const ids = async (query: Record<string, string>) =>
      (await api().get('/periodic-tasks').query(query).expect(200)).body.items.map((t: { id: string }) => t.id);
    expect(await ids({ owner: 'channel:1' })).toEqual(['t0', 't1', 't2']);
    expect(await ids({ task: 'odd' })).toEqual(['t1', 't3', 't5']);
    expect(await ids({ enabled: 'false' })).toEqual(['t4']);
    expect(await ids({ owner: 'channel:2', task: 'even', enabled: 'true' })).toEqual(['t6']);
    expect(await ids({ owner: 'nobody' })).toEqual([]);
  });

  it.each([
    [{ limit: '-1' }, '/limit'],
    [{ limit: '0' }, '/limit'],
    [{ limit: 'ten' }, '/limit'],
    [{ limit: '1001' }, '/limit'],
    [{ enabled: 'yes' }, '/enabled'],
    [{ colour: 'red' }, '/colour'],
    [{ cursor: 'not a cursor!' }, '/cursor'],
  ])('refuses the query %j with a 400 naming %s', async (query, path) => {
    const res = await api().get('/periodic-tasks').query(query);
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });
});

describe('GET /periodic-tasks/{id}', () => {
  it('refuses unknown query parameters', async () => {
    await create({ id: 'q', task: 't', schedule: 'every 1h' }).expect(201);
    const res = await api().get('/periodic-tasks/q').query({ verbose: 'true' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ in: 'query', path: '/verbose', message: 'unknown query parameter "verbose"' }]);
    expect((await api().post('/periodic-tasks/q/trigger').query({ now: '1' })).status).toBe(400);
  });

  it('answers 404 for an unknown id', async () => {
    const res = await api().get('/periodic-tasks/nope');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ status: 404, detail: 'There is no periodic task with id "nope".' });
  });
});

describe('PATCH /periodic-tasks/{id}', () => {
  beforeEach(async () => {
    await create({ id: 'p', task: 't', schedule: 'every 1h', tolerance: '1m' }).expect(201);
  });

  it('recomputes nextRun from now when the schedule changes', async () => {
    clock.set('2026-11-20T05:03:00.000Z');
    const res = await api().patch('/periodic-tasks/p').send({ schedule: '*/15 * * * *' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      schedule: '*/15 * * * *',
      nextRun: '2026-11-20T05:15:00.000Z',
      updatedAt: '2026-11-20T05:03:00.000Z',
    });
  });

  it('keeps the creation time as the anchor of a changed interval schedule', async () => {
    clock.set('2026-11-20T05:03:00.000Z');
    const res = await api().patch('/periodic-tasks/p').send({ schedule: 'every 10m offset 1m' });
    expect(res.body.nextRun).toBe('2026-11-20T05:11:00.000Z');
  });

  it('recomputes nextRun when the time zone changes', async () => {
    await api().patch('/periodic-tasks/p').send({ schedule: 'daily' }).expect(200);
    const res = await api().patch('/periodic-tasks/p').send({ timezone: 'America/New_York' });
    expect(res.body.nextRun).toBe('2026-11-20T05:00:00.000Z');
  });

  it('changes other fields without moving nextRun', async () => {
    clock.set('2026-11-20T00:30:00.000Z');
    const res = await api()
      .patch('/periodic-tasks/p')
      .send({ task: 'u', args: [1, 2], priority: -3, owner: 'x', subject: null, concurrencyPolicy: 'replace' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      task: 'u',
      args: [1, 2],
      priority: -3,
      owner: 'x',
      concurrencyPolicy: 'replace',
      nextRun: '2026-11-20T01:00:00.000Z',
    });
  });

  it('clears nextRun on disabling and recomputes it from now on enabling', async () => {
    const off = await api().patch('/periodic-tasks/p').send({ enabled: false });
    expect(off.body).toMatchObject({ enabled: false, nextRun: null });
    clock.set('2026-11-20T07:20:00.000Z');
    const on = await api().patch('/periodic-tasks/p').send({ enabled: true });
    expect(on.body).toMatchObject({ enabled: true, nextRun: '2026-11-20T08:00:00.000Z' });
  });

  it('resets tolerance and timebox to their defaults with null', async () => {
    await api().patch('/periodic-tasks/p').send({ timebox: '10m' }).expect(200);
    const res = await api().patch('/periodic-tasks/p').send({ tolerance: null, timebox: null });
    expect(res.body).toMatchObject({ tolerance: null, timebox: null, effectiveTolerance: '5s', effectiveTimebox: '30m' });
  });

  it('refuses a schedule shorter than the kept tolerance', async () => {
    const res = await api().patch('/periodic-tasks/p').send({ schedule: 'every 30s' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ path: '/tolerance' });
  });

  it.each([
    [{ nextRun: T0 }, '/nextRun', '"nextRun" is read-only'],
    [{ lastRun: T0 }, '/lastRun', '"lastRun" is read-only'],
    [{ state: {} }, '/state', '"state" is read-only'],
    [{ id: 'q' }, '/id', '"id" is read-only'],
    [{ createdAt: T0 }, '/createdAt', '"createdAt" is read-only'],
  ])('refuses the read-only field in %j', async (body, path, message) => {
    const res = await api().patch('/periodic-tasks/p').send(body);
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ in: 'body', path, message }]);
  });

  it('refuses a bad schedule naming /schedule and leaves the task alone', async () => {
    const res = await api().patch('/periodic-tasks/p').send({ schedule: 'every now and then' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].path).toBe('/schedule');
    expect((await api().get('/periodic-tasks/p')).body.schedule).toBe('every 1h');
  });

  it('answers 404 for an unknown id', async () => {
    expect((await api().patch('/periodic-tasks/nope').send({ priority: 1 })).status).toBe(404);
  });
});

describe('DELETE', () => {
  it('deletes one task with 204, then answers 404', async () => {
    await create({ id: 'd', task: 't', schedule: 'every 1h' }).expect(201);
    const res = await api().delete('/periodic-tasks/d');
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await api().get('/periodic-tasks/d')).status).toBe(404);
    expect((await api().delete('/periodic-tasks/d')).status).toBe(404);
  });

  it('deletes every task of an owner and counts them', async () => {
    await create({ id: 'o1', task: 't', owner: 'channel:9', schedule: 'every 1h' }).expect(201);
    await create({ id: 'o2', task: 't', owner: 'channel:9', schedule: 'every 1h' }).expect(201);
    await create({ id: 'o3', task: 't', owner: 'channel:10', schedule: 'every 1h' }).expect(201);
    const res = await api().delete('/periodic-tasks').query({ owner: 'channel:9' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: 2 });
    const left = await api().get('/periodic-tasks');
    expect(left.body.items.map((t: { id: string }) => t.id)).toEqual(['o3']);
    expect((await api().delete('/periodic-tasks').query({ owner: 'channel:9' })).body).toEqual({ deleted: 0 });
  });

  it('refuses to delete without an owner', async () => {
    await create({ id: 'keep', task: 't', schedule: 'every 1h' }).expect(201);
    const res = await api().delete('/periodic-tasks');
    expect(res.status).toBe(400);
    expect(res.body.errors[0].path).toBe('/owner');
    expect((await api().delete('/periodic-tasks').query({ owner: 'x', task: 't' })).status).toBe(400);
    expect((await api().get('/periodic-tasks/keep')).status).toBe(200);
  });

  it('keeps the jobs of a deleted task, unlinked', async () => {
    await create({ id: 'j', task: 't', schedule: 'every 1h' }).expect(201);
    const job = await api().post('/periodic-tasks/j/trigger').expect(201);
    await api().delete('/periodic-tasks/j').expect(204);
    const { rows } = await tdb.db.pool.query('select periodic_task_id from job where id = $1', [job.body.id]);
    expect(rows).toEqual([{ periodic_task_id: null }]);
  });
});

describe('POST /periodic-tasks/{id}/trigger', () => {
  it('submits a job of the task now', async () => {
    await create({
      id: 'tr',
      task: 'mail.poll',
      group: 'mail',
      args: { box: 'INBOX' },
      subject: 's',
      submitter: 'me',
      priority: 5,
      schedule: 'every 1h',
    }).expect(201);
    clock.set('2026-11-20T00:10:00.000Z');
    const res = await api().post('/periodic-tasks/tr/trigger');
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      type: 'mail.poll',
      group: 'mail',
      args: { box: 'INBOX' },
      subject: 's',
      submitter: 'me',
      priority: 5,
      state: 'queued',
      runAt: '2026-11-20T00:10:00.000Z',
      attempts: 0,
      maxAttempts: 1,
      periodicTaskId: 'tr',
      timebox: '30m',
      createdAt: '2026-11-20T00:10:00.000Z',
    });
    expect(res.body.id).toMatch(/^\d+$/);
    expect((await api().get('/periodic-tasks/tr')).body.nextRun).toBe('2026-11-20T01:00:00.000Z');
  });

  it('answers 409 under policy forbid while a job of the task is open', async () => {
    await create({ id: 'fb', task: 't', schedule: 'every 1h' }).expect(201);
    const first = await api().post('/periodic-tasks/fb/trigger').expect(201);
    const res = await api().post('/periodic-tasks/fb/trigger');
    expect(res.status).toBe(409);
    expect(res.body.detail).toContain(`(${first.body.id})`);
    await tdb.db.pool.query(`update job set state = 'finished' where id = $1`, [first.body.id]);
    expect((await api().post('/periodic-tasks/fb/trigger')).status).toBe(201);
  });

  it('cancels the open job under policy replace', async () => {
    await create({ id: 'rp', task: 't', schedule: 'every 1h', concurrencyPolicy: 'replace' }).expect(201);
    const first = await api().post('/periodic-tasks/rp/trigger').expect(201);
    const second = await api().post('/periodic-tasks/rp/trigger').expect(201);
    const { rows } = await tdb.db.pool.query('select id::text, state from job order by job.id');
    expect(rows).toEqual([
      { id: first.body.id, state: 'cancelled' },
      { id: second.body.id, state: 'queued' },
    ]);
  });

  it('submits alongside an open job under policy allow', async () => {
    await create({ id: 'al', task: 't', schedule: 'every 1h', concurrencyPolicy: 'allow' }).expect(201);
    await api().post('/periodic-tasks/al/trigger').expect(201);
    await api().post('/periodic-tasks/al/trigger').expect(201);
    const { rows } = await tdb.db.pool.query(`select count(*)::int as n from job where state = 'queued'`);
    expect(rows[0].n).toBe(2);
  });

  it('answers 404 for an unknown task', async () => {
    expect((await api().post('/periodic-tasks/nope/trigger')).status).toBe(404);
  });
});

describe('access', () => {
  let guarded: TestStack;
  beforeAll(async () => {
    const { TOKENS } = await import('../support/app.js');
    guarded = await createTestStack({ db: tdb.db, clock, tokens: TOKENS, listen: false });
  });
  afterAll(async () => guarded?.close());

  it('lets a reader read but not write, and keeps workers and producers out', async () => {
    const { bearer } = await import('../support/app.js');
    const g = () => request(guarded.app.server);
    await g()
      .post('/periodic-tasks')
      .set('authorization', bearer('admin'))
      .send({ id: 'acl', task: 't', schedule: 'every 1h' })
      .expect(201);
    expect((await g().get('/periodic-tasks/acl').set('authorization', bearer('reader'))).status).toBe(200);
    expect((await g().get('/periodic-tasks').set('authorization', bearer('reader'))).status).toBe(200);
    expect((await g().patch('/periodic-tasks/acl').set('authorization', bearer('reader')).send({ priority: 1 })).status).toBe(403);
    expect((await g().post('/periodic-tasks/acl/trigger').set('authorization', bearer('reader'))).status).toBe(403);
    expect((await g().get('/periodic-tasks').set('authorization', bearer('worker'))).status).toBe(403);
    expect(
      (await g().post('/periodic-tasks').set('authorization', bearer('producer')).send({ task: 't', schedule: 'every 1h' })).status,
    ).toBe(403);
    expect((await g().delete('/periodic-tasks/acl')).status).toBe(401);
  });
});
