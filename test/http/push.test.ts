import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { jobDto } from '../../src/http/schemas/jobs.js';
import { leasedJobDto } from '../../src/http/schemas/workers.js';
import { DeliveryEngine } from '../../src/scheduler/delivery-engine.js';
import type { PushSenderEvents } from '../../src/scheduler/push-sender.js';
import { createTestStack, type TestStack } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import { useJobsApi } from '../support/fixture.js';
import { type JobsApi, sleep, until } from './jobs-support.js';
import { type Answer, startReceiver, type Receiver } from './webhooks-support.js';

/**
 * Push types through the real server, database and a real receiver on 127.0.0.1: every answer's
 * outcome, 202 and the endpoint's own report, timeouts, pause, switching push off, and a type's
 * concurrency held across three instances. Real time: the requests and their timeouts are real.
 */
let tdb: TestDatabase;
let api: JobsApi;
let receiver: Receiver;
const engines: DeliveryEngine[] = [];
const extraStacks: TestStack[] = [];
type Pushed = PushSenderEvents['pushed'][0];
const pushed: Pushed[] = [];

useJobsApi(
  { clean: ['push_type', 'webhook_event', 'webhook_delivery', 'webhook', 'job', 'flow_slot', 'flow_token', 'flow_policy'] },
  (f) => ({ tdb, api } = f),
);

function startEngine(stack: TestStack): DeliveryEngine {
  const engine = new DeliveryEngine(stack.ctx, {
    renderJob: jobDto,
    push: { workers: stack.services.workers, renderLeased: leasedJobDto, waitMs: 2_000, refreshMs: 200 },
  });
  engine.push!.events.on('pushed', (p) => pushed.push(p));
  engine.start();
  engines.push(engine);
  return engine;
}

beforeEach(async () => {
  pushed.length = 0;
  receiver = await startReceiver();
  // answers as the job's args say: { status, body?, headers?, delayMs? }
  receiver.answer = (_n, req) => (JSON.parse(req.raw) as { job: { args: Answer } }).job.args;
});
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
  await Promise.all(extraStacks.splice(0).map((s) => s.close()));
  await receiver.close();
});

async function setPush(type: string, push: unknown, extra: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const res = await api.patch(`/types/${type}`, { push, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const job = async (id: string) => (await api.get(`/jobs/${id}`)).body as Record<string, any>;
const pushedOf = (id: string) => pushed.find((p) => p.jobId === id);

describe('PATCH /types/{type} push', () => {
  it('sets, shows (the secret once), rotates and removes the push settings', async () => {
    const set = await setPush('thumb', { url: receiver.url });
    expect(set.push).toEqual({ url: receiver.url, timeout: '30s', secret: expect.stringMatching(/^whsec_/) });
    expect((await api.get('/types/thumb')).body.push).toEqual({ url: receiver.url, timeout: '30s' });
    // the secret is kept when none is given, replaced when one is, generated anew for null
    expect((await setPush('thumb', { url: receiver.url, timeout: '2m' })).push).toEqual({ url: receiver.url, timeout: '2m' });
    expect((await setPush('thumb', { url: receiver.url, secret: 'a-secret-of-16-chars-or-more' })).push.secret).toBe(
      'a-secret-of-16-chars-or-more',
    );
    const rotated = (await setPush('thumb', { url: receiver.url, secret: null })).push.secret;
    expect(rotated).toMatch(/^whsec_/);
    expect((await setPush('thumb', null)).push).toBeNull();
    expect((await api.get('/types/thumb')).body.push).toBeNull();
  });

  it('answers 400 naming the field for a bad url, secret or timeout, and changes nothing', async () => {
    for (const [push, field] of [
      [{ url: 'ftp://example.com/x' }, '/push/url'],
      [{ url: 'not a url' }, '/push/url'],
      [{ url: receiver.url, timeout: '16m' }, '/push/timeout'],
      [{ url: receiver.url, secret: 'short' }, '/push/secret'],
      [{ url: receiver.url, extra: 1 }, '/push'],
      [{}, '/push/url'],
    ] as const) {
      const res = await api.patch('/types/thumb', { push, paused: true });
      expect(res.status, JSON.stringify(push)).toBe(400);
      expect(JSON.stringify(res.body)).toContain(field);
    }
    const after = (await api.get('/types/thumb')).body;
    expect(after.push).toBeNull();
    expect(after.paused).toBe(false);
  });
});

describe('pushing jobs', () => {
  it('signs each push and acts on every kind of answer', async () => {
    const secret = (await setPush('answers', { url: receiver.url, timeout: '1s' })).push.secret as string;
    const inAnHour = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3600_000);
    const cases: [string, Answer][] = [
      ['ok', { status: 200, body: JSON.stringify({ thumb: 'x.png' }), headers: { 'content-type': 'application/json' } }],
      ['text', { status: 204 }],
      ['accepted', { status: 202 }],
      ['busy', { status: 429, headers: { 'retry-after': '120' } }],
      ['unavailable', { status: 503, headers: { 'retry-after': inAnHour.toUTCString() } }],
      ['unavailable-no-retry-after', { status: 503 }],
      ['gone', { status: 410, body: 'no such image' }],
      ['broken', { status: 500, body: 'boom' }],
      ['redirect', { status: 302, headers: { location: 'http://elsewhere.example/' } }],
      ['slow', { status: 200, delayMs: 3_000 }],
    ];
    const ids = new Map<string, string>();
    for (const [name, answer] of cases) ids.set(name, (await api.create({ type: 'answers', args: answer, subject: name })).id);
    startEngine(api.stack);
    await until(() => pushed.length === cases.length, 'every job pushed');

    // signed like a webhook: HMAC-SHA256 of "<t>.<body>"; the body is { job, leaseToken }
    for (const r of receiver.requests) {
      const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(r.headers['jobclock-signature']));
      expect(m).not.toBeNull();
      const mac = createHmac('sha256', secret).update(`${m![1]}.${r.raw}`).digest();
      expect(timingSafeEqual(mac, Buffer.from(m![2]!, 'hex'))).toBe(true);
      const body = JSON.parse(r.raw);
      expect(r.headers['jobclock-event']).toBe('job.push');
      expect(r.headers['jobclock-delivery']).toBe(body.leaseToken);
      expect(body.job).toMatchObject({ type: 'answers', state: 'running', worker: 'push:test-instance', leaseToken: body.leaseToken });
    }

    const ok = await job(ids.get('ok')!);
    expect(ok).toMatchObject({ state: 'finished', result: { thumb: 'x.png' }, worker: 'push:test-instance' });
    expect(await job(ids.get('text')!)).toMatchObject({ state: 'finished', result: null });
    expect(await job(ids.get('accepted')!)).toMatchObject({ state: 'running', attempts: 1 });
    // 429/503 with Retry-After: failed with that retryIn, the attempt counted (API.md)
    const busy = await job(ids.get('busy')!);
    expect(busy).toMatchObject({ state: 'queued', attempts: 1, error: { statusCode: 429 } });
    expect(Date.parse(busy.runAt) - Date.now()).toBeGreaterThan(100_000);
    const unavailable = await job(ids.get('unavailable')!);
    expect(unavailable).toMatchObject({ state: 'queued', attempts: 1, error: { statusCode: 503 } });
    expect(Math.abs(Date.parse(unavailable.runAt) - inAnHour.getTime())).toBeLessThan(1_000);
    // 503 without Retry-After, 5xx, a redirect, a timeout: failed, retried while attempts remain
    for (const name of ['unavailable-no-retry-after', 'broken', 'redirect', 'slow']) {
      const j = await job(ids.get(name)!);
      expect(j, name).toMatchObject({ state: 'queued', attempts: 1 });
      expect(Date.parse(j.runAt), name).toBeGreaterThan(Date.now());
    }
    expect((await job(ids.get('broken')!)).error).toEqual({ message: 'HTTP 500: boom', statusCode: 500 });
    expect((await job(ids.get('slow')!)).error).toEqual({ message: 'no answer within 1000 ms', statusCode: null });
    expect((await job(ids.get('redirect')!)).error.message).toContain('not followed');
    // any other 4xx: failed for good, attempts left or not
    expect(await job(ids.get('gone')!)).toMatchObject({
      state: 'failed',
      attempts: 1,
      error: { message: 'HTTP 410: no such image', statusCode: 410 },
    });
  });

  it('hands a job over on 202: the endpoint heartbeats and reports with the lease token', async () => {
    await setPush('async', { url: receiver.url });
    const { id } = await api.create({ type: 'async', args: { status: 202 } });
    startEngine(api.stack);
    await until(() => pushedOf(id) !== undefined, 'pushed');
    const leaseToken = JSON.parse(receiver.requests[0]!.raw).leaseToken as string;
    const beat = await api.post(`/jobs/${id}/heartbeat`, { leaseToken, lease: '2m', progress: { done: 1 } });
    expect(beat.status).toBe(200);
    expect(beat.body.cancel).toBe(false);
    const done = await api.post(`/jobs/${id}/finished`, { leaseToken, result: { later: true } });
    expect(done.status).toBe(200);
    expect(await job(id)).toMatchObject({ state: 'finished', result: { later: true }, progress: { done: 1 } });
  });

  it('cuts a result longer than 1 MiB: the job finishes without one', async () => {
    await setPush('big', { url: receiver.url });
    const big = JSON.stringify({ data: 'x'.repeat(1024 * 1024 + 10) });
    receiver.answer = () => ({ status: 200, body: big });
    const { id } = await api.create({ type: 'big' });
    startEngine(api.stack);
    await until(() => pushedOf(id) !== undefined, 'pushed');
    expect(await job(id)).toMatchObject({ state: 'finished', result: null });
  });

  it('gives the leases back when the engine stops with pushes in flight', async () => {
    await setPush('stopping', { url: receiver.url });
    const { id } = await api.create({ type: 'stopping', args: { status: 200, delayMs: 5_000 } });
    const engine = startEngine(api.stack);
    await receiver.received(1);
    const stopping = Date.now();
    await engine.stop();
    expect(Date.now() - stopping).toBeLessThan(1_000);
    // cut short: queued again at once, the attempt not counted
    expect(await job(id)).toMatchObject({ state: 'queued', attempts: 0, worker: null });
  });

  it('leases nothing of a paused type, and pushes once it is resumed', async () => {
    await setPush('paused', { url: receiver.url }, { paused: true });
    const { id } = await api.create({ type: 'paused', args: { status: 200 } });
    startEngine(api.stack);
    await sleep(600);
    expect(receiver.requests).toHaveLength(0);
    expect((await job(id)).state).toBe('queued');
    await api.patch('/types/paused', { paused: false });
    await until(() => pushedOf(id) !== undefined, 'pushed after resume');
    expect((await job(id)).state).toBe('finished');
  });

  it('switched off, pushes no more: the jobs stay queued for pulling workers', async () => {
    await setPush('off', { url: receiver.url });
    startEngine(api.stack);
    const first = await api.create({ type: 'off', args: { status: 200 } });
    await until(() => pushedOf(first.id) !== undefined, 'pushed while on');
    await setPush('off', null);
    await sleep(300); // the engine hears of it through the push-types channel
    const second = await api.create({ type: 'off', args: { status: 200 } });
    await sleep(600);
    expect(receiver.requests).toHaveLength(1);
    expect((await job(second.id)).state).toBe('queued');
    const [leased] = await api.lease({ worker: 'puller', types: ['off'] });
    expect(leased?.id).toBe(second.id);
  });

  it("leaves a push type's jobs to its endpoint: a worker naming no types never gets them", async () => {
    await setPush('pushed', { url: receiver.url }); // no engine runs: the jobs stay queued
    const pushedJobs = await Promise.all([1, 2, 3].map(() => api.create({ type: 'pushed' })));
    const plain = await api.create({ type: 'plain' });
    const untyped = await api.lease({ worker: 'any', limit: 10 });
    expect(untyped.map((j) => j.id)).toEqual([plain.id]);
    // named, the type is leased as before (a worker can still drain it by hand)
    const named = await api.lease({ worker: 'named', types: ['pushed'], limit: 10 });
    expect(named.map((j) => j.id).sort()).toEqual(pushedJobs.map((j) => j.id).sort());
  });
});

describe('webhook deliveries beside busy workers', () => {
  it('go out within the budget while workers lease and report, and at full speed once they stop', async () => {
    const hook = await api.post('/webhooks', { url: receiver.url, events: ['job.finished'] });
    expect(hook.status).toBe(201);
    receiver.answer = () => ({ status: 204 });
    const jobs = Array.from({ length: 30 }, () => ({ type: 'busy' }));
    expect((await api.post('/jobs/batch', { jobs })).status).toBe(201);
    const leased = await api.lease({ worker: 'w', types: ['busy'], limit: 30 });
    const reports = leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' }));
    expect((await api.post('/jobs/reports', { reports })).status).toBe(200);
    let busy = true;
    const engine = new DeliveryEngine(api.stack.ctx, { renderJob: jobDto, busy: () => busy, busyRatePerSec: 10 });
    engines.push(engine);
    engine.start();
    await sleep(500);
    // a burst of 1, then 10 a second
    expect(receiver.requests.length).toBeGreaterThan(0);
    expect(receiver.requests.length).toBeLessThanOrEqual(8);
    busy = false;
    await receiver.received(30);
    // the workers' own signal: a lease or a report within the last second
    expect(api.stack.services.workers.busy(60_000)).toBe(true);
    expect(api.stack.services.workers.busy(0)).toBe(false);
  });

  it('are not woken by every notification while the budget holds them back', async () => {
    const live = await createTestStack({ db: tdb.connect(3), listen: true, instanceId: 'live' });
    extraStacks.push(live);
    receiver.answer = () => ({ status: 204 });
    expect((await api.post('/webhooks', { url: receiver.url, events: ['job.finished'] })).status).toBe(201);
    expect((await api.post('/jobs/batch', { jobs: Array.from({ length: 5 }, () => ({ type: 'held' })) })).status).toBe(201);
    const leased = await api.lease({ worker: 'w', types: ['held'], limit: 5 });
    const reports = leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' }));
    expect((await api.post('/jobs/reports', { reports })).status).toBe(200);
    let busy = true;
    const engine = new DeliveryEngine(live.ctx, { renderJob: jobDto, busy: () => busy, busyRatePerSec: 1 });
    engines.push(engine);
    const woken: string[] = [];
    engine.events.on('step', ({ reason }) => woken.push(reason));
    engine.start();
    await receiver.received(1); // the burst of 1; the next attempt may begin a second later
    // its end wakes the engine once (to record it): past that
    await until(() => engine.active === 0, 'the attempt ended');
    await sleep(50);
    woken.length = 0;
    const notify = async () => {
      for (let i = 0; i < 5; i++) {
        await tdb.db.pool.query(`SELECT pg_notify('jobclock_deliveries', '')`);
        await sleep(20);
      }
      await sleep(100);
    };
    await notify();
    expect(woken.filter((r) => r === 'wake')).toEqual([]);
    expect(receiver.requests).toHaveLength(1);
    // not held back, a notification wakes it at once
    busy = false;
    await notify();
    expect(woken).toContain('wake');
    await receiver.received(5);
  });
});

describe('across instances', () => {
  it("never has more of a type's requests in flight than its concurrency, with three instances pushing", async () => {
    await setPush('limited', { url: receiver.url }, { concurrency: 2 });
    const jobs = Array.from({ length: 40 }, () => ({ type: 'limited', args: { status: 200, delayMs: 20 } }));
    expect((await api.post('/jobs/batch', { jobs })).status).toBe(201);
    startEngine(api.stack);
    for (const instanceId of ['second', 'third']) {
      const stack = await createTestStack({ db: tdb.db, instanceId });
      extraStacks.push(stack);
      startEngine(stack);
    }
    await until(() => pushed.length === 40, 'all 40 pushed');
    expect(receiver.maxConcurrent).toBe(2);
    const { rows } = await tdb.db.pool.query<{ worker: string; n: number }>(
      `SELECT worker, count(*)::int AS n FROM job WHERE type = 'limited' AND state = 'finished' GROUP BY worker ORDER BY worker`,
    );
    expect(rows.reduce((s, r) => s + r.n, 0)).toBe(40);
    expect(rows.map((r) => r.worker).every((w) => w.startsWith('push:'))).toBe(true);
    expect(rows.length).toBeGreaterThan(1);
  });
});
