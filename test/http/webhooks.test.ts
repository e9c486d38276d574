import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { jobDto } from '../../src/http/schemas/jobs.js';
import { DeliveryEngine } from '../../src/scheduler/delivery-engine.js';
import { RetentionCleaner } from '../../src/scheduler/retention-cleaner.js';
import { WebhookService } from '../../src/services/webhooks.js';
import { bearer, createTestStack, TOKENS } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import { useJobsApi } from '../support/fixture.js';
import { insertTask, insertTaskJob, type JobsApi } from './jobs-support.js';
import { startReceiver, type Receiver, useReceiverAndEngine } from './webhooks-support.js';

const T0 = '2026-11-20T00:00:00.000Z';
const clock = new ManualClock(T0);
let tdb: TestDatabase;
let api: JobsApi;
let engine: DeliveryEngine;
let receiver: Receiver;

useJobsApi({ clock, clean: ['webhook_event', 'webhook_delivery', 'webhook', 'job', 'periodic_task'] }, (f) => ({ tdb, api } = f));

const admin = bearer('admin');
const worker = bearer('worker');
const post = (path: string, body?: unknown) => api.post(path, body, admin);
const get = (path: string) => api.get(path, admin);

useReceiverAndEngine(
  clock,
  T0,
  () => api.stack.ctx,
  (r, e) => ((receiver = r), (engine = e)),
);

/** Subscribes the receiver (or `url`); returns the answer's body. */
async function subscribe(body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await post('/webhooks', { url: receiver.url, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** Creates a job and leases it; returns its id and lease token. */
async function running(body: Record<string, unknown> = {}, ask: Record<string, unknown> = {}): Promise<{ id: string; leaseToken: string }> {
  const job = await api.create({ type: 'mail.send', ...body });
  const [leased] = await api.lease({ worker: 'w1', types: [job.type], ...ask });
  expect(leased?.id).toBe(job.id);
  return { id: job.id, leaseToken: leased!.leaseToken };
}

/** Checks Jobclock-Signature as a receiver would: HMAC-SHA256 of "<t>.<body>" with the secret. */
function verify(secret: string, header: string, raw: string): number {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  expect(m, header).not.toBeNull();
  const expected = createHmac('sha256', secret).update(`${m![1]}.${raw}`).digest();
  expect(timingSafeEqual(expected, Buffer.from(m![2]!, 'hex'))).toBe(true);
  return Number(m![1]);
}

describe('webhook routes', () => {
  it('creates a webhook with a generated secret shown once, and lists, reads, changes and deletes it', async () => {
    const created = await subscribe({ events: ['job.failed', 'task.failing'], filter: { type: 'mail.send' } });
    expect(created).toEqual({
      id: expect.any(String),
      url: receiver.url,
      events: ['job.failed', 'task.failing'],
      filter: { type: 'mail.send', group: null, periodicTaskId: null },
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
      createdAt: T0,
      updatedAt: T0,
    });
    const { secret: _secret, ...shown } = created;
    expect((await get(`/webhooks/${created.id}`)).body).toEqual(shown);

    const second = await subscribe({ events: ['job.finished'], secret: 'my-own-secret-0123456789' });
    expect(second.secret).toBe('my-own-secret-0123456789');
    const page1 = await get('/webhooks?limit=1');
    expect(page1.body.items.map((w: any) => w.id)).toEqual([created.id]);
    expect(page1.body.items[0].secret).toBeUndefined();
    const page2 = await get(`/webhooks?limit=1&cursor=${page1.body.nextCursor}`);
    expect(page2.body).toEqual({ items: [expect.objectContaining({ id: second.id })], nextCursor: null });

    clock.advance(1000);
    const rotated = await api.patch(`/webhooks/${created.id}`, { secret: null, filter: null }, admin);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.secret);
    expect(rotated.body.filter).toEqual({ type: null, group: null, periodicTaskId: null });
    expect(rotated.body.updatedAt).toBe('2026-11-20T00:00:01.000Z');
    const renamed = await api.patch(`/webhooks/${created.id}`, { url: 'https://hooks.example/x' }, admin);
    expect(renamed.body).toMatchObject({ url: 'https://hooks.example/x', events: ['job.failed', 'task.failing'] });
    expect(renamed.body.secret).toBeUndefined();

    const del = await api.stack.app.inject({ method: 'DELETE', url: `/webhooks/${created.id}`, headers: { authorization: admin } });
    expect(del.statusCode).toBe(204);
    expect((await get(`/webhooks/${created.id}`)).status).toBe(404);
    expect((await get(`/webhooks/${created.id}/deliveries`)).status).toBe(404);
  });

  it.each([
    [{ url: 'ftp://hooks.example/x', events: ['job.failed'] }, '/url'],
    [{ url: 'file:///etc/passwd', events: ['job.failed'] }, '/url'],
    [{ url: 'not a url', events: ['job.failed'] }, '/url'],
    [{ url: 'https://hooks.example/x', events: ['job.exploded'] }, '/events/0'],
    [{ url: 'https://hooks.example/x', events: [] }, '/events'],
    [{ url: 'https://hooks.example/x', events: ['job.failed'], filter: { kind: 'x' } }, '/filter/kind'],
    [{ url: 'https://hooks.example/x', events: ['job.failed'], secret: 'short' }, '/secret'],
    [{ events: ['job.failed'] }, '/url'],
  ])('refuses %j with a 400 naming %s, and creates nothing', async (body, path) => {
    const res = await api.post('/webhooks', body, admin);
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: any) => e.path)).toContain(path);
    expect((await get('/webhooks')).body.items).toEqual([]);
  });

  it('refuses a PATCH to a non-http URL and changes nothing', async () => {
    const w = await subscribe({ events: ['job.failed'] });
    const res = await api.patch(`/webhooks/${w.id}`, { url: 'javascript:alert(1)', events: ['job.finished'] }, admin);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].path).toBe('/url');
    expect((await get(`/webhooks/${w.id}`)).body).toMatchObject({ url: receiver.url, events: ['job.failed'] });
  });

  it('is for admin only', async () => {
    const guarded = await createTestStack({ db: tdb.db, tokens: TOKENS, listen: false });
    try {
      const send = (method: 'GET' | 'POST', role: (typeof TOKENS)[number]['role']) =>
        guarded.app.inject({
          method,
          url: '/webhooks',
          headers: { authorization: bearer(role) },
          ...(method === 'POST' ? { payload: { url: receiver.url, events: ['job.failed'] } } : {}),
        });
      for (const role of ['worker', 'producer', 'reader'] as const) {
        expect((await send('GET', role)).statusCode).toBe(403);
        expect((await send('POST', role)).statusCode).toBe(403);
      }
      expect((await send('POST', 'admin')).statusCode).toBe(201);
    } finally {
      await guarded.close();
    }
  });
});

describe('job events', () => {
  it('POSTs job.finished signed, with the job as the API shows it', async () => {
    const w = await subscribe({ events: ['job.finished'] });
    const job = await running({ args: { to: 'a@example.com' } });
    clock.advance(2000);
    expect((await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken, result: { sent: 1 } }, worker)).status).toBe(200);

    clock.advance(500);
    expect(await engine.tick(clock.now())).toEqual({ delivered: 1, retried: 0, failed: 0 });
    expect(receiver.requests).toHaveLength(1);
    const r = receiver.requests[0]!;
    const t = verify(w.secret, r.headers['jobclock-signature'] as string, r.raw);
    expect(t).toBe(Math.floor(clock.now().getTime() / 1000));
    expect(r.headers['jobclock-event']).toBe('job.finished');
    expect(r.headers['content-type']).toBe('application/json');
    const body = JSON.parse(r.raw);
    expect(r.headers['jobclock-delivery']).toBe(body.id);
    expect(body).toMatchObject({ event: 'job.finished', at: '2026-11-20T00:00:02.000Z' });
    const shown = (await api.get(`/jobs/${job.id}`, admin)).body;
    expect(body.job).toEqual(shown);

    const list = await get(`/webhooks/${w.id}/deliveries`);
    expect(list.body).toEqual({
      items: [
        {
          id: body.id,
          event: 'job.finished',
          status: 'delivered',
          attempts: 1,
          lastStatusCode: 200,
          lastError: null,
          nextAttemptAt: null,
          createdAt: '2026-11-20T00:00:02.000Z',
          deliveredAt: '2026-11-20T00:00:02.500Z',
        },
      ],
      nextCursor: null,
    });
    // delivered once: nothing more to send
    expect(await engine.tick(clock.advance(60_000))).toEqual({ delivered: 0, retried: 0, failed: 0 });
  });

  it('sends job.failed only for a final failure, and job.cancelled and job.dropped', async () => {
    await subscribe({ events: ['job.failed', 'job.cancelled', 'job.dropped', 'job.finished'] });
    const twice = await running({ maxAttempts: 2 });
    await api.post(`/jobs/${twice.id}/failed`, { leaseToken: twice.leaseToken, error: { message: 'once' }, retryIn: '1s' }, worker);
    expect(await engine.tick(clock.now())).toEqual({ delivered: 0, retried: 0, failed: 0 });
    clock.advance(1000);
    const [again] = await api.lease({ worker: 'w1', types: ['mail.send'] });
    expect(again?.id).toBe(twice.id);
    const res = await api.post(`/jobs/${twice.id}/failed`, { leaseToken: again!.leaseToken, error: { message: 'twice' } }, worker);
    expect(res.body.job ?? res.body).toMatchObject({ state: 'failed' });

    const final = await running({ maxAttempts: 1 });
    await api.post(`/jobs/${final.id}/failed`, { leaseToken: final.leaseToken, error: { message: 'no' } }, worker);

    const queued = await api.create({ type: 'other', runAt: '2027-01-01T00:00:00.000Z' });
    expect((await post(`/jobs/${queued.id}/cancel`)).status).toBe(200);
    const busy = await running();
    expect((await post(`/jobs/${busy.id}/cancel`)).status).toBe(200);
    // the worker of a cancelled job still reports: no second event
    clock.advance(10);
    await api.post(`/jobs/${busy.id}/finished`, { leaseToken: busy.leaseToken }, worker);

    // a job of a periodic task begun too soon after the last run is dropped by the lease
    await insertTask(tdb.db, { id: 'tick', lastRun: new Date(clock.now().getTime() - 10_000), policy: 'allow' });
    const dropped = await insertTaskJob(tdb.db, { taskId: 'tick', runAt: clock.now(), type: 'tick.job' });
    expect(await api.lease({ worker: 'w1', types: ['tick.job'] })).toEqual([]);

    await engine.tick(clock.now());
    const got = receiver.requests.map((r) => JSON.parse(r.raw)).map((b) => [b.event, b.job.id, b.job.state]);
    expect(got.sort()).toEqual(
      [
        ['job.failed', twice.id, 'failed'],
        ['job.failed', final.id, 'failed'],
        ['job.cancelled', queued.id, 'cancelled'],
        ['job.cancelled', busy.id, 'cancelled'],
        ['job.dropped', dropped, 'dropped'],
      ].sort(),
    );
  });

  it('sends job.failed when the lease reaper fails a job whose lease expired', async () => {
    await subscribe({ events: ['job.failed'] });
    const job = await running({ maxAttempts: 1 }, { lease: '30s' });
    const { LeaseReaper } = await import('../../src/scheduler/lease-reaper.js');
    expect((await new LeaseReaper(api.stack.ctx).tick(clock.advance(31_000))).failed).toBe(1);
    await engine.tick(clock.now());
    expect(receiver.requests.map((r) => JSON.parse(r.raw).job.id)).toEqual([job.id]);
  });

  it('sends only the events that match the filter of each webhook', async () => {
    const byType = await subscribe({ events: ['job.finished'], filter: { type: 'a' } });
    const byGroup = await subscribe({ events: ['job.finished'], filter: { group: 'g2' } });
    const both = await subscribe({ events: ['job.finished'], filter: { type: 'a', group: 'g2' } });
    const byTask = await subscribe({ events: ['job.finished'], filter: { periodicTaskId: 'nightly' } });
    const other = await subscribe({ events: ['job.failed'] });
    const finish = async (body: Record<string, unknown>) => {
      const j = await api.create(body);
      const [l] = await api.lease({ worker: 'w', types: [body.type] });
      await api.post(`/jobs/${j.id}/finished`, { leaseToken: l!.leaseToken }, worker);
      return j.id as string;
    };
    const a1 = await finish({ type: 'a', group: 'g1' });
    const a2 = await finish({ type: 'a', group: 'g2' });
    const b2 = await finish({ type: 'b', group: 'g2' });
    await insertTask(tdb.db, { id: 'nightly', policy: 'forbid' });
    const n1 = await insertTaskJob(tdb.db, { taskId: 'nightly', runAt: clock.now(), type: 'c', intervalMs: null, toleranceMs: null });
    const [l] = await api.lease({ worker: 'w', types: ['c'] });
    await api.post(`/jobs/${n1}/finished`, { leaseToken: l!.leaseToken }, worker);
    await engine.tick(clock.now());
    const ids = async (w: Record<string, any>) => {
      const items = (await get(`/webhooks/${w.id}/deliveries`)).body.items;
      return items.length;
    };
    expect([await ids(byType), await ids(byGroup), await ids(both), await ids(byTask), await ids(other)]).toEqual([2, 2, 1, 1, 0]);
    const sent = receiver.requests.map((r) => JSON.parse(r.raw).job.id).sort();
    expect(sent).toEqual([a1, a2, a2, b2, a2, n1].sort());
  });

  it('sends the job as it is when sent, and only its id once retention deleted it', async () => {
    await subscribe({ events: ['job.finished'] });
    receiver.answer = (n) => (n === 1 ? { status: 500 } : { status: 200 });
    const job = await running();
    await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken, result: 7 }, worker);
    await engine.tick(clock.now());
    expect(JSON.parse(receiver.requests[0]!.raw).job).toMatchObject({ id: job.id, state: 'finished', result: 7 });
    await tdb.db.pool.query('DELETE FROM job');
    await engine.tick(clock.advance(3_750));
    expect(JSON.parse(receiver.requests[1]!.raw)).toMatchObject({ event: 'job.finished', job: { id: job.id } });
    expect(Object.keys(JSON.parse(receiver.requests[1]!.raw).job)).toEqual(['id']);
  });

  it('drops a delivery recorded for a webhook deleted meanwhile when it comes due', async () => {
    await tdb.db.pool.query(
      `INSERT INTO webhook_delivery (webhook_id, event, subject, at, next_attempt_at, created_at) VALUES (999, 'job.finished', '1', $1, $1, $1)`,
      [T0],
    );
    expect(await engine.tick(clock.now())).toEqual({ delivered: 0, retried: 0, failed: 0 });
    expect((await tdb.db.pool.query('SELECT count(*)::int AS n FROM webhook_delivery')).rows[0].n).toBe(0);
  });

  it('records nothing, and sends nothing, without a subscription', async () => {
    const job = await running();
    await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken }, worker);
    expect((await tdb.db.pool.query('SELECT count(*)::int AS n FROM webhook_delivery')).rows[0].n).toBe(0);
    expect(await engine.tick(clock.now())).toEqual({ delivered: 0, retried: 0, failed: 0 });
  });
});

describe('task events', () => {
  /** Runs one job of task `id` to `outcome`. */
  async function run(id: string, outcome: 'finished' | 'failed') {
    const jobId = await insertTaskJob(tdb.db, { taskId: id, runAt: clock.now(), type: 'task.job', intervalMs: null, toleranceMs: null });
    const [l] = await api.lease({ worker: 'w', types: ['task.job'] });
    expect(l?.id).toBe(jobId);
    clock.advance(1000);
    const res = await api.post(
      `/jobs/${jobId}/${outcome}`,
      { leaseToken: l!.leaseToken, error: outcome === 'failed' ? {} : undefined },
      worker,
    );
    expect(res.status).toBe(200);
    clock.advance(1000);
  }
  const events = () => receiver.requests.map((r) => JSON.parse(r.raw)).map((b) => [b.event, b.task.id, b.task.health.status]);

  it('sends task.failing when runs start failing and task.recovered when one finishes again', async () => {
    const w = await subscribe({ events: ['task.failing', 'task.recovered', 'task.overdue'] });
    await insertTask(tdb.db, { id: 'sync', policy: 'forbid' });
    await run('sync', 'finished');
    await run('sync', 'failed');
    await run('sync', 'failed');
    await run('sync', 'finished');
    await run('sync', 'finished');
    await engine.tick(clock.now());
    expect(events()).toEqual([
      ['task.failing', 'sync', 'failing'],
      ['task.recovered', 'sync', 'ok'],
    ]);
    const failing = JSON.parse(receiver.requests[0]!.raw);
    verify(w.secret, receiver.requests[0]!.headers['jobclock-signature'] as string, receiver.requests[0]!.raw);
    expect(failing).toMatchObject({
      event: 'task.failing',
      at: '2026-11-20T00:00:03.000Z',
      task: {
        id: 'sync',
        type: 'task.sync',
        group: 'default',
        health: {
          status: 'failing',
          consecutiveFailures: 1,
          lastFailureAt: '2026-11-20T00:00:03.000Z',
          lastSuccessAt: '2026-11-20T00:00:01.000Z',
        },
      },
    });
  });

  it('sends task.overdue once when overdue_at passes, and task.recovered when a run finishes', async () => {
    await subscribe({ events: ['task.overdue', 'task.recovered'], filter: { periodicTaskId: 'quiet' } });
    await insertTask(tdb.db, { id: 'quiet', policy: 'forbid' });
    await insertTask(tdb.db, { id: 'loud', policy: 'forbid' });
    await tdb.db.pool.query(`UPDATE periodic_task SET alert_after = 60000, overdue_at = $1`, ['2026-11-20T00:10:00.000Z']);
    expect(await engine.tick(clock.set('2026-11-20T00:09:59.999Z') ?? clock.now())).toEqual({ delivered: 0, retried: 0, failed: 0 });
    clock.set('2026-11-20T00:10:00.000Z');
    expect(await engine.tick(clock.now())).toEqual({ delivered: 1, retried: 0, failed: 0 });
    expect(await engine.tick(clock.advance(60_000))).toEqual({ delivered: 0, retried: 0, failed: 0 });
    await run('quiet', 'finished');
    await engine.tick(clock.now());
    expect(events()).toEqual([
      ['task.overdue', 'quiet', 'overdue'],
      ['task.recovered', 'quiet', 'ok'],
    ]);
    expect(JSON.parse(receiver.requests[0]!.raw).at).toBe('2026-11-20T00:10:00.000Z');
  });

  it('does not announce a disabled task as overdue', async () => {
    await subscribe({ events: ['task.overdue'] });
    await insertTask(tdb.db, { id: 'off', policy: 'forbid' });
    await tdb.db.pool.query(`UPDATE periodic_task SET enabled = false, alert_after = 60000, overdue_at = $1`, [T0]);
    expect(await engine.tick(clock.advance(1000))).toEqual({ delivered: 0, retried: 0, failed: 0 });
  });
});

describe('delivery', () => {
  it('retries a receiver that fails first, with backoff, and shows each attempt', async () => {
    const w = await subscribe({ events: ['job.finished'] });
    receiver.answer = (n) => (n <= 2 ? { status: n === 1 ? 500 : 429, body: 'busy' } : { status: 204 });
    const job = await running();
    await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken }, worker);

    expect(await engine.tick(clock.now())).toEqual({ delivered: 0, retried: 1, failed: 0 });
    let [d] = (await get(`/webhooks/${w.id}/deliveries`)).body.items;
    // 5 s × jitter 0.75
    expect(d).toMatchObject({
      status: 'pending',
      attempts: 1,
      lastStatusCode: 500,
      lastError: 'HTTP 500: busy',
      nextAttemptAt: '2026-11-20T00:00:03.750Z',
    });
    expect(await engine.tick(clock.advance(3_749))).toEqual({ delivered: 0, retried: 0, failed: 0 });
    expect(await engine.tick(clock.advance(1))).toEqual({ delivered: 0, retried: 1, failed: 0 });
    [d] = (await get(`/webhooks/${w.id}/deliveries`)).body.items;
    expect(d).toMatchObject({ attempts: 2, lastStatusCode: 429, nextAttemptAt: '2026-11-20T00:00:11.250Z' });
    expect(await engine.tick(clock.advance(7_500))).toEqual({ delivered: 1, retried: 0, failed: 0 });
    [d] = (await get(`/webhooks/${w.id}/deliveries?status=delivered`)).body.items;
    expect(d).toMatchObject({ status: 'delivered', attempts: 3, lastStatusCode: 204, lastError: null, nextAttemptAt: null });
    const ids = new Set(receiver.requests.map((r) => r.headers['jobclock-delivery']));
    expect(ids.size).toBe(1);
  });

  it('keeps retrying for 24 hours, then gives up', async () => {
    const w = await subscribe({ events: ['job.finished'] });
    receiver.answer = () => ({ status: 503 });
    const job = await running();
    await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken }, worker);
    const start = clock.now().getTime();
    let attempts = 0;
    for (;;) {
      const r = await engine.tick(clock.now());
      attempts += r.retried + r.failed;
      if (r.failed === 1) break;
      const [d] = (await get(`/webhooks/${w.id}/deliveries`)).body.items;
      clock.set(d.nextAttemptAt);
    }
    expect(clock.now().getTime() - start).toBeGreaterThanOrEqual(24 * 3600 * 1000);
    const [d] = (await get(`/webhooks/${w.id}/deliveries`)).body.items;
    expect(d).toMatchObject({ status: 'failed', attempts, lastStatusCode: 503, nextAttemptAt: null });
    expect(receiver.requests).toHaveLength(attempts);
  });

  it('never follows a redirect', async () => {
    const elsewhere = await startReceiver();
    try {
      const w = await subscribe({ events: ['job.finished'] });
      receiver.answer = () => ({ status: 302, headers: { location: `${elsewhere.url}/stolen` } });
      const job = await running();
      await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken }, worker);
      expect(await engine.tick(clock.now())).toEqual({ delivered: 0, retried: 1, failed: 0 });
      expect(elsewhere.requests).toHaveLength(0);
      const [d] = (await get(`/webhooks/${w.id}/deliveries`)).body.items;
      expect(d.lastError).toBe(`redirect to ${elsewhere.url}/stolen not followed`);
    } finally {
      await elsewhere.close();
    }
  });

  it('reads at most 1 MiB of an answer and times out a receiver that does not answer', async () => {
    const w = await subscribe({ events: ['job.finished'] });
    const slow = new DeliveryEngine(api.stack.ctx, { renderJob: jobDto, timeoutMs: 300, random: () => 0.5 });
    receiver.answer = (n) => (n === 1 ? { status: 500, body: 'x'.repeat(3 * 1024 * 1024) } : { status: 200, delayMs: 2_000 });
    const job = await running();
    await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken }, worker);
    expect(await slow.tick(clock.now())).toEqual({ delivered: 0, retried: 1, failed: 0 });
    let [d] = (await get(`/webhooks/${w.id}/deliveries`)).body.items;
    expect(d.lastError).toBe(`HTTP 500: ${'x'.repeat(500)}`);
    const started = Date.now();
    expect(await slow.tick(clock.advance(60_000))).toEqual({ delivered: 0, retried: 1, failed: 0 });
    expect(Date.now() - started).toBeLessThan(1_500);
    [d] = (await get(`/webhooks/${w.id}/deliveries`)).body.items;
    expect(d).toMatchObject({ attempts: 2, lastStatusCode: null, lastError: 'no answer within 300 ms' });
    await slow.stop();
  });

  it('delivers every event at least once to a receiver that was down while they happened', async () => {
    const port = receiver.port;
    await receiver.close();
    const w = await subscribe({ events: ['job.finished'] });
    await tdb.db.pool.query(`UPDATE webhook SET url = $1 WHERE id = $2`, [`http://127.0.0.1:${port}/hook`, w.id]);
    const jobs = await api.post('/jobs/batch', { jobs: Array.from({ length: 200 }, (_, i) => ({ type: 'bulk', args: { i } })) }, admin);
    expect(jobs.status).toBe(201);
    const leased = [
      ...(await api.lease({ worker: 'w', types: ['bulk'], limit: 100 })),
      ...(await api.lease({ worker: 'w', types: ['bulk'], limit: 100 })),
    ];
    expect(leased).toHaveLength(200);
    const reports = leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' }));
    expect((await api.post('/jobs/reports', { reports }, worker)).status).toBe(200);
    expect(await engine.tick(clock.now())).toEqual({ delivered: 0, retried: 200, failed: 0 });

    receiver = await startReceiver({ port });
    for (let i = 0; i < 10; i++) await engine.tick(clock.advance(60_000));
    const byJob = new Map<string, number>();
    for (const r of receiver.requests) {
      const id = JSON.parse(r.raw).job.id as string;
      byJob.set(id, (byJob.get(id) ?? 0) + 1);
    }
    expect(byJob.size).toBe(200);
    const duplicates = [...byJob.values()].reduce((a, n) => a + n - 1, 0);
    expect(duplicates).toBe(0);
    const pending = await tdb.db.pool.query(`SELECT count(*)::int AS n FROM webhook_delivery WHERE status <> 'delivered'`);
    expect(pending.rows[0].n).toBe(0);
  });

  it('never sends one attempt from two instances at once', async () => {
    await subscribe({ events: ['job.finished'] });
    receiver.answer = () => ({ status: 200, delayMs: 20 });
    const jobs = await api.post('/jobs/batch', { jobs: Array.from({ length: 150 }, () => ({ type: 'pair' })) }, admin);
    expect(jobs.status).toBe(201);
    const leased = [
      ...(await api.lease({ worker: 'w', types: ['pair'], limit: 100 })),
      ...(await api.lease({ worker: 'w', types: ['pair'], limit: 50 })),
    ];
    const reports = leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' }));
    await api.post('/jobs/reports', { reports }, worker);
    const other = createTestStack({ db: tdb.connect(5), clock, listen: false, instanceId: 'other' });
    const second = await other;
    const engines = [engine, new DeliveryEngine(second.ctx, { renderJob: jobDto, maxInFlight: 16 })];
    try {
      const results = await Promise.all(engines.map((e) => e.tick(clock.now())));
      expect(results.reduce((a, r) => a + r.delivered, 0)).toBe(150);
      expect(results.every((r) => r.delivered > 0)).toBe(true);
      expect(new Set(receiver.requests.map((r) => r.headers['jobclock-delivery'])).size).toBe(150);
      expect(receiver.requests).toHaveLength(150);
    } finally {
      await engines[1]!.stop();
      await second.close();
    }
  });

  it('wakes on NOTIFY and sends without a tick', async () => {
    const live = await createTestStack({ db: tdb.connect(3), listen: true, instanceId: 'live' });
    const loop = new DeliveryEngine(live.ctx, { renderJob: jobDto, idleMs: 60_000 });
    try {
      await subscribe({ events: ['job.cancelled'] });
      loop.start();
      await new Promise((r) => loop.events.once('sleep', r));
      const job = await api.create({ type: 'wake', runAt: '2027-01-01T00:00:00.000Z' });
      const started = Date.now();
      await post(`/jobs/${job.id}/cancel`);
      await receiver.received(1);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(JSON.parse(receiver.requests[0]!.raw).job.id).toBe(job.id);
    } finally {
      await loop.stop();
      await live.close();
    }
  });

  it('keeps at most maxInFlight requests in flight, and the loop sends every delivery', async () => {
    const live = await createTestStack({ db: tdb.connect(3), listen: true, instanceId: 'live' });
    const loop = new DeliveryEngine(live.ctx, { renderJob: jobDto, maxInFlight: 4 });
    try {
      await subscribe({ events: ['job.cancelled'] });
      receiver.answer = () => ({ status: 200, delayMs: 10 });
      const jobs = await api.post(
        '/jobs/batch',
        { jobs: Array.from({ length: 60 }, () => ({ type: 'later', runAt: '2027-01-01T00:00:00.000Z' })) },
        admin,
      );
      expect(jobs.status).toBe(201);
      loop.start();
      expect((await post('/jobs/cancel', { filter: { type: 'later' } })).status).toBe(200);
      await receiver.received(60);
      for (let i = 0; i < 100; i++) {
        const left = await tdb.db.pool.query(`SELECT count(*)::int AS n FROM webhook_delivery WHERE status <> 'delivered'`);
        if (left.rows[0].n === 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(receiver.maxConcurrent).toBeLessThanOrEqual(4);
      expect(receiver.maxConcurrent).toBeGreaterThan(1);
    } finally {
      await loop.stop();
      await live.close();
    }
    const states = await tdb.db.pool.query(`SELECT status, count(*)::int AS n FROM webhook_delivery GROUP BY status`);
    expect(states.rows).toEqual([{ status: 'delivered', n: 60 }]);
  });

  it('stores secrets encrypted with JOBCLOCK_SECRET_KEY, so the database alone cannot sign', async () => {
    const ctx = { ...api.stack.ctx, secretKey: 'k'.repeat(40) };
    const w = await new WebhookService(ctx).create({ url: receiver.url, events: ['job.finished'] }, 'admin');
    const stored = (await tdb.db.pool.query('SELECT secret FROM webhook WHERE id = $1', [w.id])).rows[0].secret as string;
    expect(stored).toMatch(/^aes-256-gcm:/);
    expect(stored).not.toContain(w.secret!.slice(6));
    const job = await running();
    await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken }, worker);
    // an instance without the key cannot sign: the attempt fails, saying why
    expect(await engine.tick(clock.now())).toEqual({ delivered: 0, retried: 1, failed: 0 });
    const [d] = (await get(`/webhooks/${w.id}/deliveries`)).body.items;
    expect(d.lastError).toBe('the secret is encrypted and JOBCLOCK_SECRET_KEY is not set');
    expect(receiver.requests).toHaveLength(0);
    const keyed = new DeliveryEngine(ctx, { renderJob: jobDto });
    expect(await keyed.tick(clock.advance(3_750))).toEqual({ delivered: 1, retried: 0, failed: 0 });
    verify(w.secret!, receiver.requests[0]!.headers['jobclock-signature'] as string, receiver.requests[0]!.raw);
    await keyed.stop();
  });

  it('stops at once with a request in flight, which is made again once its hold ends', async () => {
    const live = await createTestStack({ db: tdb.connect(3), listen: true, instanceId: 'live' });
    const loop = new DeliveryEngine(live.ctx, { renderJob: jobDto });
    try {
      const w = await subscribe({ events: ['job.cancelled'] });
      receiver.answer = () => ({ status: 200, delayMs: 5_000 });
      loop.start();
      const job = await api.create({ type: 'slow', runAt: '2027-01-01T00:00:00.000Z' });
      await post(`/jobs/${job.id}/cancel`);
      await receiver.received(1);
      const stopping = Date.now();
      await loop.stop();
      expect(Date.now() - stopping).toBeLessThan(1_000);
      const [d] = (await get(`/webhooks/${w.id}/deliveries`)).body.items;
      expect(d).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null, lastError: null });
    } finally {
      await loop.stop();
      await live.close();
    }
  });

  it('signs with a rotated secret from then on', async () => {
    const w = await subscribe({ events: ['job.finished'] });
    const rotated = (await api.patch(`/webhooks/${w.id}`, { secret: 'rotated-secret-0123456789' }, admin)).body;
    expect(rotated.secret).toBe('rotated-secret-0123456789');
    const job = await running();
    await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken }, worker);
    await engine.tick(clock.now());
    verify('rotated-secret-0123456789', receiver.requests[0]!.headers['jobclock-signature'] as string, receiver.requests[0]!.raw);
  });

  it('deletes delivered deliveries older than the retention, and keeps pending ones', async () => {
    const w = await subscribe({ events: ['job.finished'] });
    receiver.answer = (n) => (n === 1 ? { status: 200 } : { status: 500 });
    for (let i = 0; i < 2; i++) {
      const job = await running();
      await api.post(`/jobs/${job.id}/finished`, { leaseToken: job.leaseToken }, worker);
      await engine.tick(clock.now());
    }
    const cleaner = new RetentionCleaner(api.stack.ctx);
    await cleaner.tick(clock.advance(8 * 24 * 3600 * 1000));
    const left = (await get(`/webhooks/${w.id}/deliveries`)).body.items;
    expect(left.map((d: any) => d.status)).toEqual(['pending']);
  });
});

afterAll(() => undefined);
