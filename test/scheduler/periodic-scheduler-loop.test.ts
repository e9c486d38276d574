import { once } from 'node:events';
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PeriodicScheduler } from '../../src/scheduler/periodic-scheduler.js';
import { createTestStack, type TestStack } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/** Real clock, real timers, real LISTEN/NOTIFY: how late is a job submitted after nextRun? */
let tdb: TestDatabase;
let stack: TestStack;
let scheduler: PeriodicScheduler | null = null;

const LATENESS_BUDGET_MS = 150; // the contract says 100 ms; slack for a loaded 2-core machine

beforeAll(async () => {
  tdb = await createTestDatabase();
  stack = await createTestStack({ db: tdb.db, instanceId: 'loop-instance' });
});
afterEach(async () => {
  await scheduler?.stop();
  scheduler = null;
  await tdb.db.pool.query('delete from job');
  await tdb.db.pool.query('delete from periodic_task');
});
afterAll(async () => {
  await stack?.close();
  await tdb?.destroy();
});

async function waitForJob(taskId: string, timeoutMs: number): Promise<{ scheduled_at: Date; created_at: Date; seenAt: number }> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const { rows } = await tdb.db.pool.query('select scheduled_at, created_at from job where periodic_task_id = $1', [taskId]);
    if (rows[0]) return { ...rows[0], seenAt: Date.now() };
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`no job of ${taskId} within ${timeoutMs} ms`);
}

describe('PeriodicScheduler loop', () => {
  it(`submits a job within ${LATENESS_BUDGET_MS} ms of nextRun after being woken by the task being created`, async () => {
    scheduler = new PeriodicScheduler(stack.ctx);
    const asleep = once(scheduler.events, 'sleep');
    scheduler.start();
    await asleep; // nothing to do: asleep for up to 30 s
    const firstRunAt = new Date(Date.now() + 300);
    await request(stack.app.server)
      .post('/periodic-tasks')
      .send({ id: 'soon', task: 't', schedule: 'every 1h', firstRunAt: firstRunAt.toISOString() })
      .expect(201);
    const job = await waitForJob('soon', 3_000);
    expect(job.scheduled_at).toEqual(firstRunAt);
    const lateness = job.created_at.getTime() - firstRunAt.getTime();
    expect(lateness).toBeGreaterThanOrEqual(0);
    expect(lateness).toBeLessThanOrEqual(LATENESS_BUDGET_MS);
    expect(job.seenAt - firstRunAt.getTime()).toBeLessThan(1_000);
  });

  it('submits on time by its own timer, and keeps going run after run', async () => {
    const firstRunAt = new Date(Date.now() + 300);
    await request(stack.app.server)
      .post('/periodic-tasks')
      .send({ id: 'tick', task: 't', schedule: 'every 1s', firstRunAt: firstRunAt.toISOString(), concurrencyPolicy: 'allow' })
      .expect(201);
    scheduler = new PeriodicScheduler(stack.ctx);
    scheduler.start();
    await new Promise((r) => setTimeout(r, 2_500));
    const { rows } = await tdb.db.pool.query<{ scheduled_at: Date; created_at: Date }>(
      `select scheduled_at, created_at from job where periodic_task_id = 'tick' order by scheduled_at`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(2);
    rows.forEach((r, k) => {
      expect(r.scheduled_at.getTime()).toBe(firstRunAt.getTime() + k * 1_000);
      const lateness = r.created_at.getTime() - r.scheduled_at.getTime();
      expect(lateness).toBeGreaterThanOrEqual(0);
      expect(lateness).toBeLessThanOrEqual(LATENESS_BUDGET_MS);
    });
  });

  it('re-plans when a task is changed to run sooner', async () => {
    await request(stack.app.server).post('/periodic-tasks').send({ id: 'later', task: 't', schedule: 'every 1h' }).expect(201);
    scheduler = new PeriodicScheduler(stack.ctx);
    const asleep = once(scheduler.events, 'sleep');
    scheduler.start();
    await asleep;
    const firstRunAt = new Date(Date.now() + 300);
    await request(stack.app.server).patch('/periodic-tasks/later').send({ firstRunAt: firstRunAt.toISOString() }).expect(200);
    const job = await waitForJob('later', 3_000);
    expect(job.created_at.getTime() - firstRunAt.getTime()).toBeLessThanOrEqual(LATENESS_BUDGET_MS);
  });

  it('stops promptly while asleep', async () => {
    scheduler = new PeriodicScheduler(stack.ctx);
    const asleep = once(scheduler.events, 'sleep');
    scheduler.start();
    await asleep;
    const started = Date.now();
    await scheduler.stop();
    scheduler = null;
    expect(Date.now() - started).toBeLessThan(2_000); // not the loop's sleep of up to 30 s
  });
});
