import { expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { sql } from 'kysely';
import { type Executor, withTransaction } from '../../src/db/executor.js';
import { deliveryClaim, deliveryCommitLazily, deliveryFanOut } from '../../src/repositories/webhooks.js';
import type { DeliveryEngine } from '../../src/scheduler/delivery-engine.js';
import { bearer } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import { useJobsApi } from '../support/fixture.js';
import { insertTask, insertTaskJob, type JobsApi } from './jobs-support.js';
import { type Receiver, useReceiverAndEngine } from './webhooks-support.js';

/**
 * The outbox of migration 0028: events recorded once per statement, turned into one delivery per
 * subject and subscription when the engine claims them or a listing asks for them.
 */
let receiver: Receiver;
let engine: DeliveryEngine;
let api: JobsApi;
let tdb: TestDatabase;
const T0 = '2026-11-20T00:00:00.000Z';
const clock = new ManualClock(T0);

useJobsApi({ clock, clean: ['webhook_event', 'webhook_delivery', 'webhook', 'job'] }, (f) => ({ tdb, api } = f));

const admin = bearer('admin');
const worker = bearer('worker');

useReceiverAndEngine(
  clock,
  T0,
  () => api.stack.ctx,
  (r, e) => ((receiver = r), (engine = e)),
);

async function subscribe(body: Record<string, unknown> = {}): Promise<string> {
  const res = await api.post('/webhooks', { url: receiver.url, events: ['job.finished'], ...body }, admin);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

/** Creates `n` jobs of `type`, leases and finishes them in one report; returns their ids. */
async function finish(n: number, type = 'outbox'): Promise<string[]> {
  const created = await api.post('/jobs/batch', { jobs: Array.from({ length: n }, () => ({ type })) }, admin);
  expect(created.status).toBe(201);
  const leased = await api.lease({ worker: 'w', types: [type], limit: n });
  expect(leased).toHaveLength(n);
  const reports = leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' }));
  expect((await api.post('/jobs/reports', { reports }, worker)).status).toBe(200);
  return leased.map((j) => j.id as string);
}

const count = async (table: string): Promise<number> => (await tdb.db.pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;

async function deliveries(webhookId: string): Promise<Record<string, any>[]> {
  const res = await api.get(`/webhooks/${webhookId}/deliveries?limit=500`, admin);
  expect(res.status).toBe(200);
  return res.body.items;
}

it('records a report of 100 jobs for 3 subscriptions as one event, listed as 100 pending deliveries each', async () => {
  const hooks = [await subscribe(), await subscribe(), await subscribe()];
  const ids = await finish(100);
  expect(await count('webhook_event')).toBe(1);
  expect(await count('webhook_delivery')).toBe(0);

  const listed = await Promise.all(hooks.map(deliveries));
  for (const items of listed) {
    expect(items).toHaveLength(100);
    for (const d of items) {
      expect(d).toMatchObject({ event: 'job.finished', status: 'pending', attempts: 0, lastStatusCode: null, createdAt: T0 });
      expect(d.nextAttemptAt).toBe(T0);
    }
  }
  expect(new Set(listed.flat().map((d) => d.id)).size).toBe(300);
  expect(await count('webhook_event')).toBe(0);

  expect(await engine.tick(clock.now())).toEqual({ delivered: 300, retried: 0, failed: 0 });
  const sent = receiver.requests.map((r) => JSON.parse(r.raw));
  expect(new Set(sent.map((b) => b.id))).toEqual(new Set(listed.flat().map((d) => d.id)));
  expect(sent.map((b) => b.job.id).sort()).toEqual([...ids, ...ids, ...ids].sort());
  for (const r of receiver.requests) expect(r.headers['jobclock-delivery']).toBe(JSON.parse(r.raw).id);
  for (const items of await Promise.all(hooks.map(deliveries))) {
    expect(items.every((d) => d.status === 'delivered' && d.attempts === 1)).toBe(true);
  }
});

it('sends an event to the subscriptions that matched when it happened, not to one created or deleted since', async () => {
  const kept = await subscribe();
  const deleted = await subscribe();
  const other = await subscribe({ filter: { type: 'other' } });
  const [job] = await finish(1);
  const later = await subscribe();
  const del = await api.stack.app.inject({ method: 'DELETE', url: `/webhooks/${deleted}`, headers: { authorization: admin } });
  expect(del.statusCode).toBe(204);

  expect(await engine.tick(clock.now())).toEqual({ delivered: 1, retried: 0, failed: 0 });
  expect(receiver.requests).toHaveLength(1);
  expect(JSON.parse(receiver.requests[0]!.raw).job.id).toBe(job);
  expect((await deliveries(kept)).map((d) => d.status)).toEqual(['delivered']);
  expect(await deliveries(later)).toEqual([]);
  expect(await deliveries(other)).toEqual([]);
  expect(await count('webhook_delivery')).toBe(1);
});

it('sends a job that ended once, however many jobs name it in after later', async () => {
  const hook = await subscribe();
  const [done] = await finish(1, 'ended');
  const before = (await api.get(`/jobs/${done}`, admin)).body;
  for (let i = 0; i < 2; i++) {
    const res = await api.post('/jobs', { type: 'next', after: [done] }, admin);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.state).toBe('queued');
  }
  expect((await deliveries(hook)).map((d) => d.event)).toEqual(['job.finished']);
  // the ended job itself is as it was
  expect((await api.get(`/jobs/${done}`, admin)).body).toEqual(before);
});

it('sends the jobs of a periodic task that ended once, even when the task is deleted later', async () => {
  const hook = await subscribe();
  await insertTask(tdb.db, { id: 'gone' });
  await insertTaskJob(tdb.db, { taskId: 'gone', runAt: new Date(T0) });
  const [job] = await api.lease({ worker: 'w', types: ['task.gone'] });
  expect((await api.post(`/jobs/${job!.id}/finished`, { leaseToken: job!.leaseToken }, worker)).status).toBe(200);
  expect((await deliveries(hook)).map((d) => d.event)).toEqual(['job.finished']);
  const del = await api.stack.app.inject({ method: 'DELETE', url: '/periodic-tasks/gone', headers: { authorization: admin } });
  expect(del.statusCode).toBe(204);
  expect((await deliveries(hook)).map((d) => d.event)).toEqual(['job.finished']);
  expect((await api.get(`/jobs/${job!.id}`, admin)).body.periodicTaskId).toBeNull();
});

it('sends the jobs of several periodic tasks deleted by their owner once each', async () => {
  const hook = await subscribe();
  for (const id of ['o-1', 'o-2']) {
    await insertTask(tdb.db, { id });
    await insertTaskJob(tdb.db, { taskId: id, runAt: new Date(T0) });
    const [job] = await api.lease({ worker: 'w', types: [`task.${id}`] });
    expect((await api.post(`/jobs/${job!.id}/finished`, { leaseToken: job!.leaseToken }, worker)).status).toBe(200);
  }
  await tdb.db.pool.query(`UPDATE periodic_task SET owner = 'tenant-9' WHERE id IN ('o-1', 'o-2')`);
  const del = await api.stack.app.inject({ method: 'DELETE', url: '/periodic-tasks?owner=tenant-9', headers: { authorization: admin } });
  expect(del.json()).toEqual({ deleted: 2 });
  expect((await deliveries(hook)).map((d) => d.event)).toEqual(['job.finished', 'job.finished']);
});

it('turns only as many events into deliveries as a claim has room for', async () => {
  await subscribe();
  for (let i = 0; i < 5; i++) await finish(10);
  expect(await count('webhook_event')).toBe(5);
  const claimed = await deliveryClaim(api.stack.ctx.db, clock.now(), 15, 10_000);
  expect(claimed).toHaveLength(15);
  // two events of ten made the fifteen; three wait
  expect(await count('webhook_event')).toBe(3);
  expect(await count('webhook_delivery')).toBe(20);
  // a claimed attempt is held: listed with its hold's end, not claimed again until then
  const held = (await tdb.db.pool.query(`SELECT count(*)::int AS n FROM webhook_delivery WHERE held_until IS NOT NULL`)).rows[0].n;
  expect(held).toBe(15);
  expect(await deliveryClaim(api.stack.ctx.db, clock.now(), 5, 10_000)).toHaveLength(5);
  expect(await count('webhook_event')).toBe(3);
  expect(await deliveryClaim(api.stack.ctx.db, clock.now(), 100, 10_000)).toHaveLength(30);
  expect(await deliveryClaim(api.stack.ctx.db, clock.now(), 100, 10_000)).toHaveLength(0);
  expect(await deliveryClaim(api.stack.ctx.db, clock.advance(10_000), 100, 10_000)).toHaveLength(50);
});

it('makes the deliveries of events another instance is turning into deliveries once it has', async () => {
  await subscribe();
  await finish(20);
  const client = await tdb.db.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT id FROM webhook_event FOR UPDATE');
    const listing = deliveries((await api.get('/webhooks', admin)).body.items[0].id);
    await new Promise((r) => setTimeout(r, 100));
    await client.query(`DELETE FROM webhook_event`);
    await client.query(
      `INSERT INTO webhook_delivery (webhook_id, event, subject, at, next_attempt_at, created_at)
       SELECT w.id, 'job.finished', '1', $1, $1, $1 FROM webhook w`,
      [T0],
    );
    await client.query('COMMIT');
    expect(await listing).toHaveLength(1);
  } finally {
    client.release();
  }
});

it("commits a claim that made deliveries durably, even in the engine's lazily committed transaction", async () => {
  await subscribe();
  await finish(3);
  const setting = (tx: Executor) => sql<{ s: string }>`SELECT current_setting('synchronous_commit') AS s`.execute(tx.kysely);
  const seen = await withTransaction(api.stack.ctx.db, async (tx) => {
    await deliveryCommitLazily(tx);
    const lazy = (await setting(tx)).rows[0]!.s;
    const made = await deliveryFanOut(tx, 10);
    return { lazy, made, after: (await setting(tx)).rows[0]!.s };
  });
  expect(seen).toEqual({ lazy: 'off', made: 3, after: 'on' });
});
